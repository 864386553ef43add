// `npm start` (package.json) and its Node flags, for whatever starts the server as users do: the bench (both of its
// servers), the soak run and the tests.
import { readFileSync } from 'node:fs';

const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
  scripts: { start: string };
};
export const START_COMMAND = pkg.scripts.start;
const parts = /^node((?: --\S+)*) dist\/src\/cli\/bin\.js serve$/.exec(START_COMMAND);
if (!parts) throw new Error(`npm start is not "node [--flags] dist/src/cli/bin.js serve": ${START_COMMAND}`);

export const START_NODE_FLAGS: readonly string[] = parts[1]!.split(' ').filter(Boolean);
