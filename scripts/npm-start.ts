// `npm start` (package.json) and its Node flags, for whatever starts the server as users do: the bench (both of its
// servers), the soak run and the tests.
import { readFileSync } from 'node:fs';

const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
  scripts: { start: string };
};
export const START_COMMAND = pkg.scripts.start;
// exec: the shell npm starts the script in becomes node, so a SIGTERM to npm
// reaches the server itself rather than leaving it running as an orphan.
const parts = /^exec node((?: --\S+)*) dist\/src\/cli\/bin\.js serve$/.exec(START_COMMAND);
if (!parts) throw new Error(`npm start is not "exec node [--flags] dist/src/cli/bin.js serve": ${START_COMMAND}`);

export const START_NODE_FLAGS: readonly string[] = parts[1]!.split(' ').filter(Boolean);
