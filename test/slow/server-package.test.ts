// plant-store/client as a user gets it: `npm pack`, installed into a fresh
// project, imported by a strict TypeScript program (whose wrong uses must not
// compile), and run by Node against a real server.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, it } from '../helpers/requirements.js';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance } from 'fastify';
import { NPM, npmEnv, run, typecheckStrict } from '../helpers/packed.js';
import { buildApp } from '../../src/app/app.js';
import { issueToken } from '../../src/auth/tokens.js';
import { describeOnStore } from '../helpers/stores.js';

const REPO = fileURLToPath(new URL('../../../', import.meta.url));

const program = (baseUrl: string, token: string) => `
import { PlantStoreClient, PlantStoreError, type ErrorBody, type NewPlant, type Plant, type PlantId } from 'plant-store/client';

const client = new PlantStoreClient({ baseUrl: ${JSON.stringify(baseUrl)}, token: ${JSON.stringify(token)} });
const created: Plant = await client.createPlant({ id: 9223372036854775807n, name: 'Monstera', tag: 'tropical' });
const small: NewPlant = { id: 7, name: 'Fern' };
await client.createPlant(small);
const page: Plant[] = await client.listPlants({ limit: 10 });
const names: string[] = [];
for await (const p of client.iteratePlants({ pageSize: 1 })) names.push(p.name);
await client.deletePlant(9223372036854775807n);

let rangeError = '';
try {
  const id: PlantId = 2 ** 53;
  await client.deletePlant(id);
} catch (e) {
  if (e instanceof RangeError) rangeError = e.message;
}
let error: ErrorBody | undefined;
let status = 0;
try {
  await client.deletePlant(1n);
} catch (e) {
  if (e instanceof PlantStoreError) {
    status = e.status;
    error = e.body;
  }
}
const tag: string | undefined = created.tag;

// Wrong uses that must not compile (an unused @ts-expect-error fails the build).
// @ts-expect-error an id is a bigint or a number, not a string
void (() => client.createPlant({ id: '1', name: 'x' }));
// @ts-expect-error a plant needs a name
void (() => client.createPlant({ id: 1n }));
// @ts-expect-error a Plant has no id
void ((p: Plant) => p.id);
// @ts-expect-error deletePlant resolves to nothing
void (async () => (await client.deletePlant(1n)).name);
// @ts-expect-error the token is required
void (() => new PlantStoreClient({ baseUrl: 'http://x' }));

console.log(JSON.stringify({ created, page, names, rangeError, status, error, tag, left: await client.listPlants() }));
`;

describeOnStore('sqlite', 'plant-store/client from the packed tarball', (fx) => {
  let app: FastifyInstance;
  let baseUrl = '';
  let token = '';
  const dir = mkdtempSync(join(tmpdir(), 'plant-store-pack-'));
  const project = join(dir, 'consumer');

  before(async () => {
    const store = await fx.open();
    app = await buildApp(fx.config(), { store });
    baseUrl = await app.listen({ host: '127.0.0.1', port: 0 });
    token = (await issueToken(store.tokens, { owner: 'packed' })).token;
  });
  after(async () => {
    await app?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('installs, type-checks under strict settings and talks to the server', { timeout: 120_000 }, async () => {
    const env = npmEnv();
    // dist/ is already built (npm test builds first), so packing skips the prepare script.
    const packed = await run(NPM, ['pack', '--ignore-scripts', '--json', '--pack-destination', dir], {
      cwd: REPO,
      env,
    });
    const [{ filename, files }] = JSON.parse(packed.stdout) as [{ filename: string; files: Array<{ path: string }> }];
    const paths = files.map((f) => f.path);
    for (const path of ['dist/src/client/index.js', 'dist/src/client/index.d.ts', 'dist/src/cli/main.js']) {
      assert.ok(paths.includes(path), `the tarball holds ${path}`);
    }
    assert.ok(!paths.some((p) => p.startsWith('dist/test/') || p.startsWith('src/')), 'no tests or sources');

    mkdirSync(project);
    writeFileSync(
      join(project, 'package.json'),
      JSON.stringify({ name: 'consumer', version: '1.0.0', private: true, type: 'module' }),
    );
    // The client needs no native module, so install scripts (the SQLite build) are skipped.
    await run(
      NPM,
      ['install', '--ignore-scripts', '--no-audit', '--no-fund', '--prefer-offline', join(dir, filename)],
      { cwd: project, env },
    );

    writeFileSync(join(project, 'main.ts'), program(baseUrl, token));
    await typecheckStrict(project);

    const { stdout } = await run(process.execPath, ['main.js'], { cwd: project, env });
    assert.deepEqual(JSON.parse(stdout), {
      created: { name: 'Monstera', tag: 'tropical' },
      page: [{ name: 'Monstera', tag: 'tropical' }, { name: 'Fern' }],
      names: ['Monstera', 'Fern'],
      rangeError:
        'plant id 9007199254740992 is not a safe integer: numbers beyond ±(2^53-1) are not exact, so pass the id as a bigint',
      status: 404,
      error: { error: 404, message: 'no plant with id 1' },
      tag: 'tropical',
      left: [{ name: 'Fern' }],
    });
  });
});
