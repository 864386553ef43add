// plant-store/client as a user gets it: `npm pack`, installed into a fresh
// project, imported by a strict TypeScript program (whose wrong uses must not
// compile), and run by Node against a real server.
import assert from 'node:assert/strict';
import { compileAndRun, installTarball, packedSetting, packTarball } from '../helpers/packed.js';
import { it } from '../helpers/requirements.js';
import { describeOnStore } from '../helpers/stores.js';

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
  const setting = packedSetting(fx, 'packed');

  it('installs, type-checks under strict settings and talks to the server', { timeout: 120_000 }, async () => {
    // dist/ is already built (npm test builds first), so packing skips the prepare script.
    const { tarball, paths } = await packTarball(['--ignore-scripts'], setting.dir);
    for (const path of ['dist/src/client/index.js', 'dist/src/client/index.d.ts', 'dist/src/cli/main.js']) {
      assert.ok(paths.includes(path), `the tarball holds ${path}`);
    }
    assert.ok(!paths.some((p) => p.startsWith('dist/test/') || p.startsWith('src/')), 'no tests or sources');

    // The client needs no native module, so install scripts (the SQLite build) are skipped.
    const project = await installTarball(setting.dir, 'consumer', tarball, ['--ignore-scripts']);

    assert.deepEqual(await compileAndRun(project, program(setting.baseUrl, setting.token)), {
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
