// plant-store backup, restore, export and import, run as a user runs them and
// checked through a real server: a backup taken by a process of its own while
// the server takes writes, an export piped to a file and an import reading a
// file as stdin; the refusals run the CLI in this process.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, openSync, closeSync, readFileSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from '../helpers/requirements.js';
import {
  CLI_PATH,
  cleanEnv,
  cliToken,
  delay,
  httpRequest,
  listAllNames,
  migrateWithCli,
  runCli,
  serveArgs,
  stopGracefully,
  useProcessCleanup,
  type CliResult,
} from '../helpers/server.js';
import { runCliInProcess } from '../helpers/cli.js';
import { serveInProcess } from '../helpers/serve-in-process.js';
import { describeEachStore } from '../helpers/stores.js';

const dir = mkdtempSync(join(tmpdir(), 'plant-store-backup-'));
after(() => rmSync(dir, { recursive: true, force: true }));
let files = 0;
const file = (name: string) => join(dir, `${++files}-${name}`);

/** plant-store ARGS with stdin read from `input` (a file). */
function runCliWithInput(args: string[], input: string): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const fd = openSync(input, 'r');
    const child = spawn(process.execPath, [CLI_PATH, ...args], { env: cleanEnv(), stdio: [fd, 'pipe', 'pipe'] });
    closeSync(fd);
    let stdout = '';
    let stderr = '';
    child.stdout!.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr!.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr, exitedAt: performance.now() }));
  });
}

describe('backup and restore (SQLite)', () => {
  useProcessCleanup();

  it('copies a store while it takes writes: every write acknowledged before the backup began is restored', async () => {
    const db = file('live.db');
    await migrateWithCli(db);
    const token = await cliToken(db, 'alice');
    const server = await serveInProcess(serveArgs(db));
    const acked: string[] = [];
    let stop = false;
    let n = 0;
    const writers = Array.from({ length: 4 }, async () => {
      while (!stop) {
        const name = `p${n++}`;
        const res = await httpRequest(`${server.url}/plants`, { method: 'POST', token, json: { id: n * 7, name } });
        if (res.status === 200) acked.push(name);
        // Writes go on all through the backup, at a pace that leaves the machine to the copy.
        await delay(5);
      }
    });
    while (acked.length < 300) await new Promise((r) => setTimeout(r, 20));
    const before = [...acked];
    const backup = file('live.backup');
    const r = await runCli(['backup', '--db', db, '--out', backup]);
    stop = true;
    await Promise.all(writers);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stderr, /written in/);
    await stopGracefully(server);

    const restored = file('restored.db');
    const rr = await runCliInProcess(['restore', '--from', backup, '--db', restored]);
    assert.equal(rr.code, 0, rr.stderr);
    const again = await serveInProcess(serveArgs(restored));
    const names = new Set(await listAllNames(again.url, token));
    const missing = before.filter((name) => !names.has(name));
    assert.deepEqual(missing, [], `${missing.length} of ${before.length} acknowledged writes missing`);
    await stopGracefully(again);
  });

  it('refuses a store in use, a non-empty one without --force, and a damaged backup', async () => {
    const db = file('src.db');
    await migrateWithCli(db);
    const token = await cliToken(db, 'bob');
    const server = await serveInProcess(serveArgs(db));
    assert.equal(
      (await httpRequest(`${server.url}/plants`, { method: 'POST', token, json: { id: 1, name: 'one' } })).status,
      200,
    );
    const backup = file('src.backup');
    assert.equal((await runCliInProcess(['backup', '--db', db, '--out', backup])).code, 0);

    // Refusals that another command line fixes are exit code 2; the others 1.
    const exists = await runCliInProcess(['backup', '--db', db, '--out', backup]);
    assert.equal(exists.code, 2, exists.stderr);
    assert.match(exists.stderr, /exists already/);

    const inUse = await runCliInProcess(['restore', '--from', backup, '--db', db, '--force']);
    assert.equal(inUse.code, 1, inUse.stderr);
    assert.match(inUse.stderr, /in use/);
    assert.equal(
      (await httpRequest(`${server.url}/plants`, { method: 'POST', token, json: { id: 2, name: 'two' } })).status,
      200,
    );
    await stopGracefully(server);

    const full = await runCliInProcess(['restore', '--from', backup, '--db', db]);
    assert.equal(full.code, 2, full.stderr);
    assert.match(full.stderr, /--force/);

    const damaged = file('damaged.backup');
    const bytes = readFileSync(backup);
    writeFileSync(damaged, bytes.subarray(0, Math.floor(bytes.length / 2)));
    // Without a checksum of their own, so that their content is what is checked.
    const bad = await runCliInProcess(['restore', '--from', damaged, '--db', db, '--force', '--without-checksum']);
    assert.equal(bad.code, 1, bad.stderr);
    assert.match(bad.stderr, /is damaged|not a SQLite database|malformed|cannot be read/);
    const garbage = file('garbage.backup');
    writeFileSync(garbage, 'not a database at all, just text'.repeat(200));
    const notSqlite = await runCliInProcess([
      'restore',
      '--from',
      garbage,
      '--db',
      db,
      '--force',
      '--without-checksum',
    ]);
    assert.equal(notSqlite.code, 1, notSqlite.stderr);
    assert.match(notSqlite.stderr, /not a (SQLite )?database/);
    const missing = await runCliInProcess(['restore', '--from', file('missing.backup'), '--db', db, '--force']);
    assert.equal(missing.code, 2, missing.stderr);
    assert.match(missing.stderr, /no file at /);

    // Refusals changed nothing: both plants are still there.
    let check = await serveInProcess(serveArgs(db));
    assert.deepEqual(await listAllNames(check.url, token), ['one', 'two']);
    await stopGracefully(check);

    const forced = await runCliInProcess(['restore', '--from', backup, '--db', db, '--force']);
    assert.equal(forced.code, 0, forced.stderr);
    check = await serveInProcess(serveArgs(db));
    assert.deepEqual(await listAllNames(check.url, token), ['one']);
    await stopGracefully(check);
  });

  it('points PostgreSQL users to pg_dump', async () => {
    const r = await runCliInProcess([
      'backup',
      '--db',
      'postgres://postgres@127.0.0.1:5432/postgres',
      '--out',
      file('x'),
    ]);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /pg_dump/);
  });
});

describeEachStore('export and import, from SQLite', (fx) => {
  useProcessCleanup();

  it('moves plants in order with exact ids and working tokens, and importing twice adds nothing', async () => {
    const source = file('export-src.db');
    await migrateWithCli(source);
    const alice = await cliToken(source, 'alice');
    const bob = await cliToken(source, 'bob', '--scope', 'plants:read');
    const writer = await cliToken(source, 'bob');
    const server = await serveInProcess(serveArgs(source));
    const big = 2n ** 63n - 1n;
    const ids: [string, bigint, string, string?][] = [
      [alice, 9007199254740993n, 'monstera', 'tropical'],
      [writer, -(2n ** 63n), 'cactus'],
      [alice, 1n, 'fern', ''],
      [alice, big, 'last'],
      [writer, 5n, 'moss', 'green'],
    ];
    for (const [token, id, name, tag] of ids) {
      const body = `{"id":${id},"name":"${name}"${tag === undefined ? '' : `,"tag":"${tag}"`}}`;
      const res = await fetch(`${server.url}/plants`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body,
      });
      assert.equal(res.status, 200, await res.text());
    }
    await stopGracefully(server);

    const dump = file('dump.ndjson');
    const out = openSync(dump, 'w');
    const exported = await new Promise<number | null>((resolve, reject) => {
      const child = spawn(process.execPath, [CLI_PATH, 'export', '--db', source], {
        env: cleanEnv(),
        stdio: ['ignore', out, 'ignore'],
      });
      child.on('error', reject);
      child.on('close', resolve);
    });
    closeSync(out);
    assert.equal(exported, 0);
    const text = readFileSync(dump, 'utf8');
    assert.match(text, /"id":9007199254740993,/);
    assert.match(text, /"id":9223372036854775807,/);
    assert.ok(!/plnt_/.test(text), 'the export holds token hashes, never tokens');

    const first = await runCliWithInput(['import', '--db', fx.db], dump);
    assert.equal(first.code, 0, first.stderr);
    assert.match(first.stderr, /3 tokens and 5 plants were new/);
    const second = await runCliInProcess(['import', '--db', fx.db], {}, text);
    assert.equal(second.code, 0, second.stderr);
    assert.match(second.stderr, /0 tokens and 0 plants were new/);
    assert.match(second.stderr, /3 tokens and 5 plants were in the store already and are skipped/);
    // Every record read is counted once: stored or skipped.
    const third = await runCliInProcess(['import', '--json', '--db', fx.db], {}, text);
    assert.equal(third.code, 0, third.stderr);
    assert.deepEqual(JSON.parse(third.stdout), {
      read: 8,
      tokens: 0,
      plants: 0,
      tokensSkipped: 3,
      plantsSkipped: 5,
      tokenOwners: {},
    });
    // Exported again from where it was imported: the same tokens and plants.
    const again = await runCliInProcess(['export', '--db', fx.db]);
    assert.equal(again.code, 0, again.stderr);
    const records = (dumpText: string) => dumpText.trim().split('\n').slice(1).sort();
    assert.deepEqual(records(again.stdout), records(text));

    const target = await serveInProcess(serveArgs(fx.db));
    const page = await fetch(`${target.url}/plants`, { headers: { authorization: `Bearer ${alice}` } });
    assert.deepEqual(await page.json(), [
      { name: 'monstera', tag: 'tropical' },
      { name: 'fern', tag: '' },
      { name: 'last' },
    ]);
    assert.deepEqual(await listAllNames(target.url, bob), ['cactus', 'moss']);
    // The read-only token kept its scope; the exact id deletes the right plant.
    assert.equal((await httpRequest(`${target.url}/plants/5`, { method: 'DELETE', token: bob })).status, 403);
    assert.equal((await httpRequest(`${target.url}/plants/${big}`, { method: 'DELETE', token: alice })).status, 204);
    assert.equal(
      (await httpRequest(`${target.url}/plants/9007199254740992`, { method: 'DELETE', token: alice })).status,
      404,
    );
    assert.deepEqual(await listAllNames(target.url, alice), ['monstera', 'fern']);
    await stopGracefully(target);
  });

  it('refuses input that is not an export, naming the line', async () => {
    const bad = file('bad.ndjson');
    writeFileSync(bad, '{"type":"plant-store-export","version":1}\n{"type":"plant","owner":"x","id":1.5,"name":"n"}\n');
    const r = await runCliInProcess(['import', '--db', fx.db], {}, readFileSync(bad, 'utf8'));
    assert.equal(r.code, 2);
    assert.match(r.stderr, /line 2: id must be an integer between/);
    const none = file('none.ndjson');
    writeFileSync(none, 'hello\n');
    const r2 = await runCliInProcess(['import', '--db', fx.db], {}, readFileSync(none, 'utf8'));
    assert.equal(r2.code, 2);
    assert.match(r2.stderr, /line 1/);
  });
});
