import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

let cached: string | undefined;

/**
 * The version in package.json, read when asked: the compiled CLI sits in
 * dist/src/cli/ of the repository or of the installed package, three levels
 * below the package.json that ships with it.
 */
export function packageVersion(): string {
  const file = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..', 'package.json');
  cached ??= (JSON.parse(readFileSync(file, 'utf8')) as { version: string }).version;
  return cached;
}
