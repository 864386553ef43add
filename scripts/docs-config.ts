// npm run docs:config: writes docs/reference/configuration.md from src/config.ts
// and docs/reference/cli.md from src/cli/.
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CLI_PAGE, cliPage } from './cli-docs.js';
import { CONFIG_PAGE, configurationPage } from './config-docs.js';

for (const [page, text] of [
  [CONFIG_PAGE, configurationPage()],
  [CLI_PAGE, cliPage()],
] as const) {
  const path = fileURLToPath(new URL(`../../${page}`, import.meta.url));
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, text);
  process.stdout.write(`wrote ${page}\n`);
}
