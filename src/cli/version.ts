import { readFileSync } from 'node:fs';

let cached: string | undefined;

/**
 * The version in package.json, read when asked: the compiled CLI sits in
 * dist/src/cli/ of the repository or of the installed package, three levels
 * below the package.json that ships with it.
 */
export function packageVersion(): string {
  cached ??= (
    JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as { version: string }
  ).version;
  return cached;
}
