// npm run docs:config: writes docs/reference/configuration.md from src/config.ts.
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CONFIG_PAGE, configurationPage } from './config-docs.js';

const path = fileURLToPath(new URL(`../../${CONFIG_PAGE}`, import.meta.url));
mkdirSync(dirname(path), { recursive: true });
writeFileSync(path, configurationPage());
process.stdout.write(`wrote ${CONFIG_PAGE}\n`);
