// For the tests that install a packed tarball into a fresh project, as a user
// of the package would, and compile a strict TypeScript program against it.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { promisify } from 'node:util';

export const run = promisify(execFile);
export const NPM = process.platform === 'win32' ? 'npm.cmd' : 'npm';
const TSC = createRequire(import.meta.url).resolve('typescript/bin/tsc');

/** The environment without the npm_* variables of the npm script that runs the tests. */
export function npmEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !/^npm_/i.test(k)) env[k] = v;
  return env;
}

const STRICT = {
  strict: true,
  target: 'ES2022',
  lib: ['ES2022', 'DOM'],
  types: [],
  noEmitOnError: true,
  exactOptionalPropertyTypes: true,
  noUncheckedIndexedAccess: true,
  skipLibCheck: false,
};

/**
 * Compiles `main.ts` in `project` twice under strict settings: with NodeNext
 * resolution (emitting main.js) and with a bundler's. Fails with tsc's output.
 */
export async function typecheckStrict(project: string): Promise<void> {
  for (const [name, options] of [
    ['tsconfig.json', { ...STRICT, module: 'NodeNext', moduleResolution: 'NodeNext' }],
    ['tsconfig.bundler.json', { ...STRICT, module: 'ES2022', moduleResolution: 'Bundler', noEmit: true }],
  ] as const) {
    writeFileSync(join(project, name), JSON.stringify({ compilerOptions: options, files: ['main.ts'] }));
    await run(process.execPath, [TSC, '-p', name], { cwd: project }).catch((error: { stdout?: string }) => {
      assert.fail(`tsc -p ${name} failed:\n${error.stdout}`);
    });
  }
}
