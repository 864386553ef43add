// For the tests that install a packed tarball into a fresh project, as a user
// of the package would, and compile a strict TypeScript program against it.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../src/app/app.js';
import { issueToken } from '../../src/auth/tokens.js';
import { after, before } from './requirements.js';
import type { StoreFixture } from './stores.js';

export const run = promisify(execFile);
export const REPO = fileURLToPath(new URL('../../../', import.meta.url));
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
export async function typecheckStrict(project: string, tsc = TSC): Promise<void> {
  for (const [name, options] of [
    ['tsconfig.json', { ...STRICT, module: 'NodeNext', moduleResolution: 'NodeNext' }],
    ['tsconfig.bundler.json', { ...STRICT, module: 'ES2022', moduleResolution: 'Bundler', noEmit: true }],
  ] as const) {
    writeFileSync(join(project, name), JSON.stringify({ compilerOptions: options, files: ['main.ts'] }));
    await run(process.execPath, [tsc, '-p', name], { cwd: project }).catch((error: { stdout?: string }) => {
      assert.fail(`${tsc} -p ${name} failed:\n${error.stdout}`);
    });
  }
}

/** What a packed-tarball test works with: a real server, a token for it, and a scratch folder. */
export interface PackedSetting {
  readonly baseUrl: string;
  readonly token: string;
  readonly dir: string;
}

/**
 * Registers, for the enclosing suite, a server on `fx`'s store with a token
 * of `owner`, and a scratch folder removed afterwards.
 */
export function packedSetting(fx: StoreFixture, owner: string): PackedSetting {
  let app: FastifyInstance | undefined;
  const setting = { baseUrl: '', token: '', dir: mkdtempSync(join(tmpdir(), 'plant-store-pack-')) };
  before(async () => {
    const store = await fx.open();
    app = await buildApp(fx.config(), { store });
    setting.baseUrl = await app.listen({ host: '127.0.0.1', port: 0 });
    setting.token = (await issueToken(store.tokens, { owner })).token;
  });
  after(async () => {
    await app?.close();
    rmSync(setting.dir, { recursive: true, force: true });
  });
  return setting;
}

/** `npm pack` in the repository with `args`, into `dir`: the tarball's path and the paths it holds. */
export async function packTarball(args: string[], dir: string): Promise<{ tarball: string; paths: string[] }> {
  const { stdout } = await run(NPM, ['pack', ...args, '--json', '--pack-destination', dir], {
    cwd: REPO,
    env: npmEnv(),
  });
  // Lifecycle scripts may print before the JSON.
  const [{ filename, files }] = JSON.parse(stdout.slice(stdout.indexOf('['))) as [
    { filename: string; files: Array<{ path: string }> },
  ];
  return { tarball: join(dir, basename(filename)), paths: files.map((f) => f.path).sort() };
}

/** A new project `dir/name` with `tarball` installed by npm (plus `npmArgs`); resolves to its folder. */
export async function installTarball(
  dir: string,
  name: string,
  tarball: string,
  npmArgs: string[] = [],
): Promise<string> {
  const project = join(dir, name);
  mkdirSync(project);
  writeFileSync(
    join(project, 'package.json'),
    JSON.stringify({ name, version: '1.0.0', private: true, type: 'module' }),
  );
  await run(NPM, ['install', ...npmArgs, '--no-audit', '--no-fund', '--prefer-offline', tarball], {
    cwd: project,
    env: npmEnv(),
  });
  return project;
}

/** Writes `source` as the project's main.ts, type-checks it strictly, runs it, and parses the JSON it prints. */
export async function compileAndRun(project: string, source: string): Promise<unknown> {
  writeFileSync(join(project, 'main.ts'), source);
  await typecheckStrict(project);
  const { stdout } = await run(process.execPath, ['main.js'], { cwd: project, env: npmEnv() });
  return JSON.parse(stdout);
}
