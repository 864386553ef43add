// What a newcomer looks for beside the code: the licence, the changelog, a
// systemd unit and a Dockerfile, each checked for what it promises.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it, needs, requirement } from '../helpers/requirements.js';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { CLI_PATH, migrateWithCli, serveArgs, useProcessCleanup } from '../helpers/server.js';
import { serveInProcess } from '../helpers/serve-in-process.js';
import { START_NODE_FLAGS } from '../../scripts/npm-start.js';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const read = (file: string) => readFileSync(join(ROOT, file), 'utf8');
const pkg = JSON.parse(read('package.json')) as { version: string; license: string; engines: { node: string } };
const noSystemd = await requirement('systemd-analyze', async () => {
  await run('systemd-analyze', ['--version']);
});

describe('LICENSE and CHANGELOG.md', () => {
  it('the licence is the MIT licence package.json names', () => {
    assert.equal(pkg.license, 'MIT');
    const text = read('LICENSE');
    assert.match(text, /^MIT License\n\nCopyright \(c\) \d{4} /);
    assert.match(text, /Permission is hereby granted, free of charge/);
    assert.match(text, /THE SOFTWARE IS PROVIDED "AS IS"/);
  });

  it('the changelog follows Keep a Changelog and has the current version', () => {
    const text = read('CHANGELOG.md');
    assert.match(text, /^# Changelog\n/);
    assert.match(text, /keepachangelog\.com/);
    assert.match(text, /^## \[Unreleased\]$/m);
    assert.match(text, new RegExp(`^## \\[${pkg.version.replace(/\./g, '\\.')}\\] - \\d{4}-\\d{2}-\\d{2}$`, 'm'));
    for (const heading of text.matchAll(/^### (.+)$/gm)) {
      assert.ok(
        ['Added', 'Changed', 'Deprecated', 'Removed', 'Fixed', 'Security'].includes(heading[1]!),
        `Keep a Changelog section: ${heading[1]}`,
      );
    }
  });
});

describe('the built executable', () => {
  it('is executable after every build, so `npm link` and a global install keep working', () => {
    // npm sets the mode when it links the bin; a rebuild writes a new file, which tsc leaves 0644.
    assert.equal(statSync(CLI_PATH).mode & 0o111, 0o111, `${CLI_PATH} is not executable`);
  });
});

describe('deploy/plant-store.service', () => {
  const unit = read('deploy/plant-store.service');

  it('is sandboxed and keeps its data in its state directory', () => {
    for (const line of [
      'DynamicUser=yes',
      'StateDirectory=plant-store',
      'ProtectSystem=strict',
      'NoNewPrivileges=yes',
      'ProtectHome=yes',
      'PrivateTmp=yes',
      'CapabilityBoundingSet=',
      'Environment=PLANTS_DB=/var/lib/plant-store/plants.db',
      `ExecStart=/usr/bin/env node ${START_NODE_FLAGS.join(' ')} /usr/local/bin/plant-store serve`,
      'KillMode=mixed',
    ]) {
      assert.ok(unit.split('\n').includes(line), `the unit has ${line}`);
    }
    const stop = Number(/^TimeoutStopSec=(\d+)$/m.exec(unit)?.[1]);
    assert.ok(stop > 25, 'systemd waits longer than the 25 s drain before it kills');
  });

  needs(noSystemd, () =>
    it('passes systemd-analyze verify', { timeout: 30_000 }, async () => {
      // Point ExecStart at this checkout's CLI rather than an installed one.
      const dir = mkdtempSync(join(tmpdir(), 'plant-store-unit-'));
      try {
        const copy = join(dir, 'plant-store.service');
        writeFileSync(copy, unit.replace(' /usr/local/bin/plant-store ', ` ${CLI_PATH} `));
        const { stdout, stderr } = await run('systemd-analyze', ['verify', copy]);
        // verify exits 0 even for settings it ignores; anything it says is a problem.
        assert.equal(stdout + stderr, '', 'systemd-analyze verify has no complaint');
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    }),
  );
});

describe('Node.js versions', () => {
  // The supported lines and the one past its end of life that still works,
  // as docs/guides/deploying.md#nodejs-versions has them.
  const SUPPORTED = ['22', '24'];
  const table = /## Node\.js versions\n([^]*?)\n## /.exec(read('docs/guides/deploying.md'))?.[1] ?? '';

  it('package.json, the Dockerfile, the README and the guides say the same', () => {
    assert.equal(pkg.engines.node, '>=20.10', 'Node.js 20 keeps working');
    for (const major of SUPPORTED) assert.match(table, new RegExp(`^\\| ${major} \\| supported \\(LTS\\)`, 'm'));
    assert.match(table, /^\| 20\.10 and newer 20\.x \| works, but reached its end of life on 2026-04-30/m);
    assert.match(table, /`>=20\.10`/);
    const images = [...read('Dockerfile').matchAll(/^FROM node:(\d+)-/gm)].map((m) => m[1]!);
    assert.ok(images.length > 0 && images.every((m) => SUPPORTED.includes(m)), `the image is on ${images.join(', ')}`);
    assert.match(table, new RegExp(`^\\| ${images[0]} \\|.*the Docker image runs on it`, 'm'));
    for (const page of ['README.md', 'docs/getting-started.md', 'docs/guides/deploying.md']) {
      const text = read(page).replace(/\s+/g, ' ');
      assert.match(text, /Node\.js 22 or 24/, `${page} names the supported lines`);
      assert.doesNotMatch(text, /Node\.js 20 or newer/, `${page} still offers Node.js 20 as if supported`);
    }
  });
});

describe('Dockerfile', () => {
  useProcessCleanup();
  const text = read('Dockerfile');
  const froms = [...text.matchAll(/^FROM (\S+)(?: AS (\S+))?$/gm)];

  it('builds in one node:22-slim stage and runs in another, as a user other than root', () => {
    assert.equal(froms.length, 2, 'two stages');
    assert.ok(
      froms.every((m) => m[1] === 'node:22-slim'),
      'both on node:22-slim, a supported LTS line',
    );
    const runStage = text.slice(froms[1]!.index);
    assert.match(runStage, /^USER node$/m);
    assert.doesNotMatch(runStage, /apt-get|g\+\+/, 'no compiler in the image that runs');
    assert.match(runStage, /^COPY --from=build /m);
    assert.match(runStage, /^ENV [\s\S]*HOST=0\.0\.0\.0/m, 'listens beyond the container');
    assert.match(runStage, /PLANTS_DB=\/data\/plants\.db/);
    // The dependencies (and the SQLite build) from the package files alone, before any source is copied.
    const buildStage = text.slice(0, froms[1]!.index);
    const steps = ['COPY package.json package-lock.json ./', 'RUN npm ci', 'COPY . .'].map((step) =>
      buildStage.indexOf(`\n${step}`),
    );
    assert.ok(
      steps.every((at, i) => at > 0 && (i === 0 || at > steps[i - 1]!)),
      `in this order: ${steps.join(' ')}`,
    );
    const entrypoint = JSON.stringify(['node', ...START_NODE_FLAGS, 'dist/src/cli/bin.js']).replaceAll(',', ', ');
    assert.ok(runStage.split('\n').includes(`ENTRYPOINT ${entrypoint}`), `the image runs ${entrypoint}, as npm start`);
    const ignore = read('.dockerignore').split('\n');
    for (const entry of ['node_modules', 'dist', 'data', '.git']) assert.ok(ignore.includes(entry), entry);
  });

  describe('its HEALTHCHECK command', () => {
    const dir = mkdtempSync(join(tmpdir(), 'plant-store-health-'));
    const db = join(dir, 'plants.db');
    before(() => migrateWithCli(db));
    after(() => rmSync(dir, { recursive: true, force: true }));

    it('succeeds against a serving instance and fails without one', { timeout: 30_000 }, async () => {
      const cmd = /^HEALTHCHECK [^\n]*\\\n\s+CMD (\[.*\])$/m.exec(text)?.[1];
      assert.ok(cmd, 'HEALTHCHECK ... CMD ["node", ...]');
      const [exe, ...args] = JSON.parse(cmd) as string[];
      assert.equal(exe, 'node');
      const server = await serveInProcess(serveArgs(db));
      const env = { PATH: process.env.PATH ?? '', PLANTS_PORT: String(server.port) };
      await run(process.execPath, args, { env, timeout: 10_000 });
      server.kill('SIGTERM');
      await server.waitExit();
      await assert.rejects(run(process.execPath, args, { env, timeout: 10_000 }), 'fails once nothing serves');
    });
  });
});
