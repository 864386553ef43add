// plant-store-client as a browser or app developer gets it: packed alone with
// `npm pack -w plant-store-client`, installed into an empty project, type-checked
// by a strict program (whose wrong uses must not compile) and run against a
// real server. Nothing of the server may come with it.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { writeFileSync } from 'node:fs';
import {
  compileAndRun,
  installTarball,
  NPM,
  npmEnv,
  packedSetting,
  packTarball,
  REPO,
  run,
  typecheckStrict,
} from '../helpers/packed.js';
import { it } from '../helpers/requirements.js';
import { describeOnStore } from '../helpers/stores.js';

const SERVER_DEPENDENCIES = Object.keys(
  (JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as { dependencies: Record<string, string> })
    .dependencies,
);

const program = (baseUrl: string, token: string) => `
import { PlantStoreClient, PlantStoreError, type ErrorBody, type NewPlant, type Plant } from 'plant-store-client';

const client = new PlantStoreClient({ baseUrl: ${JSON.stringify(baseUrl)}, token: ${JSON.stringify(token)} });
const created: Plant = await client.createPlant({ id: 9223372036854775807n, name: 'Monstera', tag: 'tropical' });
const small: NewPlant = { id: 7, name: 'Fern' };
await client.createPlant(small);
const names: string[] = [];
for await (const p of client.iteratePlants({ pageSize: 1 })) names.push(p.name);
await client.deletePlant(9223372036854775807n);
let error: ErrorBody | undefined;
try {
  await client.deletePlant(1n);
} catch (e) {
  if (e instanceof PlantStoreError) error = e.body;
}
let refused = '';
try {
  new PlantStoreClient({ baseUrl: 'http://127.0.0.1:1', token: '' });
} catch (e) {
  if (e instanceof TypeError) refused = e.message;
}

// Wrong uses that must not compile (an unused @ts-expect-error fails the build).
// @ts-expect-error the token is required
void (() => new PlantStoreClient({ baseUrl: 'http://x' }));
declare const maybe: string | undefined;
// @ts-expect-error a token that may be undefined is not a token
void (() => new PlantStoreClient({ baseUrl: 'http://x', token: maybe }));
// @ts-expect-error a Plant has no id
void ((p: Plant) => p.id);

console.log(JSON.stringify({ created, names, error, refused, left: await client.listPlants() }));
`;

describeOnStore('sqlite', 'plant-store-client packed alone', (fx) => {
  const setting = packedSetting(fx, 'packed-client');

  it(
    'installs without any server dependency, type-checks strictly and talks to the server',
    { timeout: 180_000 },
    async () => {
      // prepack builds the package, as `npm pack -w plant-store-client` does for a user.
      const { tarball, paths } = await packTarball(['-w', 'plant-store-client'], setting.dir);
      assert.match(tarball, /plant-store-client-\d+\.\d+\.\d+\.tgz$/);
      for (const path of ['dist/index.js', 'dist/index.d.ts', 'package.json']) assert.ok(paths.includes(path), path);
      assert.deepEqual(
        paths.filter((p) => !/^dist\/[\w-]+\.(js|d\.ts)$/.test(p) && p !== 'package.json' && p !== 'README.md'),
        [],
        'only the built client, its package.json and README',
      );

      const project = await installTarball(setting.dir, 'app', tarball);
      const installed = readdirSync(join(project, 'node_modules')).filter((n) => !n.startsWith('.'));
      assert.deepEqual(installed, ['plant-store-client'], 'the client came alone');
      const lock = JSON.parse(readFileSync(join(project, 'package-lock.json'), 'utf8')) as {
        packages: Record<string, unknown>;
      };
      assert.deepEqual(Object.keys(lock.packages).sort(), ['', 'node_modules/plant-store-client']);
      for (const name of SERVER_DEPENDENCIES) assert.ok(!installed.includes(name), `${name} was installed`);
      const manifest = JSON.parse(
        readFileSync(join(project, 'node_modules/plant-store-client/package.json'), 'utf8'),
      ) as Record<string, unknown>;
      assert.equal(manifest.dependencies, undefined, 'no runtime dependencies');

      assert.deepEqual(await compileAndRun(project, program(setting.baseUrl, setting.token)), {
        created: { name: 'Monstera', tag: 'tropical' },
        names: ['Monstera', 'Fern'],
        error: { error: 404, message: 'no plant with id 1' },
        refused:
          'PlantStoreClient needs a token (a bearer token as "plant-store token create" prints it), got an empty string',
        left: [{ name: 'Fern' }],
      });
    },
  );

  it(
    'type-checks under each TypeScript line npm installs today, NodeNext and Bundler alike',
    { timeout: 300_000 },
    async () => {
      const { tarball } = await packTarball(['-w', 'plant-store-client'], setting.dir);
      // 5.9 (the last 5.x), 6 and whatever `npm install typescript` gives now (7 and later).
      const { stdout } = await run(NPM, ['view', 'typescript', 'dist-tags.latest'], { env: npmEnv() });
      const latest = stdout.trim();
      assert.match(latest, /^\d+\.\d+\.\d+$/);
      for (const version of ['5.9', '6', latest]) {
        const project = await installTarball(setting.dir, `ts-${version}`, tarball, [`typescript@${version}`]);
        writeFileSync(join(project, 'main.ts'), program(setting.baseUrl, setting.token));
        const tsc = join(project, 'node_modules/typescript/bin/tsc');
        await typecheckStrict(project, tsc);
      }
      // What the client reference says of the older resolution: TypeScript 7 removed it.
      const seven = join(setting.dir, `ts-${latest}`);
      writeFileSync(
        join(seven, 'tsconfig.node10.json'),
        JSON.stringify({ compilerOptions: { moduleResolution: 'node' }, files: ['main.ts'] }),
      );
      const refused = await run(
        process.execPath,
        [join(seven, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.node10.json'],
        { cwd: seven },
      ).then(
        () => '',
        (error: { stdout?: string }) => error.stdout ?? '',
      );
      if (Number(latest.split('.')[0]) >= 7) assert.match(refused, /moduleResolution=node10' has been removed/);
    },
  );
});
