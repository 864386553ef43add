// Where the compiled entry points live, found from this file's own location
// (dist/bench/) so the bench works from any working directory.
import { fileURLToPath } from 'node:url';

const here = (file: string) => fileURLToPath(new URL(file, import.meta.url));

export const SERVICE_MAIN = here('../src/cli/bin.js');
export const BASELINE_MAIN = here('./baseline.js');
export const LOAD_MAIN = here('./load.js');
/** bench/results in the source tree, next to this file's source. */
export const RESULTS_DIR = here('../../bench/results/');
