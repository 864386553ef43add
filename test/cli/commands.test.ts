// The plant-store CLI as a user runs it, on real stores. Commands that need no
// process of their own (token, migrate, help, usage errors) run in-process
// through main(argv, io); serve runs as a real process, since its tests are
// about signals, exit codes and what the process prints.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from '../helpers/requirements.js';
import {
  TOKEN_ANYWHERE,
  TOKEN_SHAPE,
  cliToken,
  httpRequest,
  migrateWithCli,
  runCli as spawnCli,
  serveArgs,
  tokensIn,
  useProcessCleanup,
  type CliResult,
} from '../helpers/server.js';
import { serveInProcess } from '../helpers/serve-in-process.js';
import { runCliInProcess as runCli } from '../helpers/cli.js';
import { allCommands } from '../../src/cli/main.js';
import { describeEachStore } from '../helpers/stores.js';

/** Every test here is bounded; a served process takes ~1 s to start, more on a busy machine. */
const LIMIT = { timeout: 30_000 };

interface TokenRow {
  id: string;
  owner: string;
  scopes: string[];
  created: string;
  expires: string | null;
  revoked: string | null;
}

async function listJson(db: string): Promise<TokenRow[]> {
  const r = await runCli(['token', 'list', '--json', '--db', db]);
  assert.equal(r.code, 0, r.stderr);
  return r.stdout
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as TokenRow);
}

/** Forms a token's secret could leak in: itself, and its SHA-256 in hex, base64 and base64url. */
function secretForms(token: string): string[] {
  const hash = createHash('sha256').update(token).digest();
  return [
    token,
    token.slice('plnt_'.length),
    hash.toString('hex'),
    hash.toString('base64'),
    hash.toString('base64url'),
  ];
}

function assertUsageError(r: CliResult, mention: RegExp, what: string): void {
  assert.equal(r.code, 2, `${what}: exit code (stderr: ${r.stderr})`);
  assert.equal(r.stdout, '', `${what}: nothing on stdout`);
  assert.match(r.stderr, mention, `${what}: stderr names the problem`);
  assert.ok(r.stderr.trim().split('\n').length <= 5, `${what}: a short message, not a stack trace:\n${r.stderr}`);
  assert.doesNotMatch(r.stderr, /\n\s+at /, `${what}: no stack trace`);
}

describe('plant-store help', () => {
  it('--help lists every command and exits 0; no command is a usage error', LIMIT, async () => {
    const [help, none, unknown] = await Promise.all([runCli(['--help']), runCli([]), runCli(['frobnicate'])]);
    assert.equal(help.code, 0, help.stderr);
    for (const c of ['serve', 'token create', 'token list', 'token revoke', 'migrate'])
      assert.match(help.stdout, new RegExp(`\\b${c}\\b`));
    assert.equal(none.code, 2);
    assert.equal(unknown.code, 2);
    assert.match(unknown.stderr, /frobnicate/);
  });

  it('every command has --help that states its defaults', LIMIT, async () => {
    const expected: Record<string, (string | RegExp)[]> = {
      serve: [
        '--host',
        '127.0.0.1',
        '--port',
        '8080',
        '--db',
        './data/plants.db',
        '--workers',
        '--durability',
        'full',
        '--log-level',
        'info',
        'SIGTERM',
      ],
      'token create': [
        '--owner',
        '--scope',
        'plants:read',
        'plants:write',
        '--expires-in',
        /never/,
        '--db',
        './data/plants.db',
      ],
      'token list': ['--json', '--db', './data/plants.db'],
      'token revoke': ['TOKEN|ID', '--db', './data/plants.db'],
      migrate: ['--db', './data/plants.db'],
    };
    const results = await Promise.all(Object.keys(expected).map((cmd) => runCli([...cmd.split(' '), '--help'])));
    Object.entries(expected).forEach(([cmd, needles], i) => {
      const r = results[i]!;
      assert.equal(r.code, 0, `${cmd} --help exit code: ${r.stderr}`);
      assert.match(r.stdout, new RegExp(`^Usage: plant-store ${cmd}\\b`), `${cmd} --help usage line`);
      for (const n of needles) {
        if (typeof n === 'string') assert.ok(r.stdout.includes(n), `${cmd} --help mentions ${n}:\n${r.stdout}`);
        else assert.match(r.stdout, n, `${cmd} --help`);
      }
    });
    const short = await runCli(['serve', '-h']);
    assert.equal(short.code, 0);
    assert.equal(short.stdout, results[0]!.stdout);
  });
  it('every command that takes --db takes --db-file, and lists it in --help', LIMIT, async () => {
    const withDb = (await allCommands()).filter((c) => c.settings.includes('db'));
    assert.ok(withDb.length > 1);
    for (const c of withDb) {
      const r = await runCli([...c.name.split(' '), '--db-file', '/nonexistent/db-url', '--help']);
      assert.equal(r.code, 0, `${c.name}: ${r.stderr}`);
      assert.match(r.stdout, /--db-file PATH/, `${c.name} --help`);
    }
  });

  it('token --help lists the token commands; a bare or unknown token command is a usage error', LIMIT, async () => {
    const help = await runCli(['token', '--help']);
    assert.equal(help.code, 0, help.stderr);
    assert.match(help.stdout, /^Usage: plant-store token <command>/);
    for (const c of ['token create', 'token list', 'token revoke']) assert.ok(help.stdout.includes(c), help.stdout);
    assert.doesNotMatch(help.stdout, /\bserve\b/, 'only the token commands');
    assert.equal((await runCli(['token', '-h'])).stdout, help.stdout);

    const bare = await runCli(['token']);
    assert.equal(bare.code, 2);
    assert.match(bare.stderr, /"token" needs a command/);
    assert.match(bare.stderr, /token create/);
    const unknown = await runCli(['token', 'frobnicate']);
    assert.equal(unknown.code, 2);
    assert.match(unknown.stderr, /unknown command "token frobnicate"/);

    const viaHelp = await runCli(['help', 'token', 'create']);
    assert.equal(viaHelp.code, 0);
    assert.equal(viaHelp.stdout, (await runCli(['token', 'create', '--help'])).stdout);
  });

  it('--version prints the version in package.json', LIMIT, async () => {
    const { version } = JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as {
      version: string;
    };
    const r = await runCli(['--version']);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, `${version}\n`);
    assert.match((await runCli(['--help'])).stdout, /--version/);
  });

  it('the executable (package.json "bin") runs the command line and exits with its code', LIMIT, async () => {
    const pkg = JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as {
      version: string;
      bin: Record<string, string>;
      scripts: Record<string, string>;
    };
    assert.equal(pkg.bin['plant-store'], 'dist/src/cli/bin.js');
    assert.match(pkg.scripts.start!, /^exec node --single-threaded-gc dist\/src\/cli\/bin\.js serve$/);
    const bin = readFileSync(new URL('../../../dist/src/cli/bin.js', import.meta.url), 'utf8');
    // Every launcher that runs the executable (npm's bin link, npx, systemd) gets the collector setting of npm start.
    assert.ok(bin.startsWith('#!/usr/bin/env -S node --single-threaded-gc\n'), 'the bin file starts with a shebang');
    const [version, wrong] = await Promise.all([spawnCli(['--version']), spawnCli(['frobnicate'])]);
    assert.deepEqual([version.code, version.stdout], [0, `${pkg.version}\n`]);
    assert.equal(wrong.code, 2);
    assert.match(wrong.stderr, /unknown command "frobnicate"/);
  });
});

describeEachStore('plant-store token and migrate', (fx) => {
  it('migrate applies the schema to a fresh store, then reports it up to date', LIMIT, async () => {
    const first = await runCli(['migrate', '--db', fx.db]);
    assert.equal(first.code, 0, first.stderr);
    assert.match(first.stderr, /applied: \S+/);
    assert.equal(first.stdout, '');
    const second = await runCli(['migrate', '--db', fx.db]);
    assert.equal(second.code, 0, second.stderr);
    assert.match(second.stderr, /up to date/);
    assert.doesNotMatch(second.stderr, /applied/);
  });

  it('token create prints only the token on stdout and the details on stderr', LIMIT, async () => {
    const r = await runCli(['token', 'create', '--owner', 'alice', '--db', fx.db]);
    assert.equal(r.code, 0, r.stderr);
    assert.ok(r.stdout.endsWith('\n'), 'stdout ends with a newline');
    const lines = r.stdout.split('\n');
    assert.equal(lines.length, 2, `exactly one line on stdout: ${JSON.stringify(r.stdout)}`);
    assert.match(lines[0]!, TOKEN_SHAPE);
    assert.match(r.stderr, /alice/);
    assert.match(r.stderr, /tok_[0-9a-f]+/);
    assert.ok(!r.stderr.includes(lines[0]!), 'the token is not repeated on stderr');

    const again = await cliToken(fx.db, 'alice');
    assert.notEqual(again, lines[0], 'each token is new');

    const rows = (await listJson(fx.db)).filter((t) => t.owner === 'alice');
    assert.equal(rows.length, 2);
    const id = /tok_[0-9a-f]+/.exec(r.stderr)![0];
    const row = rows.find((t) => t.id === id);
    assert.ok(row, `token list has the id ${id} that token create reported`);
    assert.deepEqual(row.scopes, ['plants:read', 'plants:write'], 'default scopes: both, as a JSON array');
    assert.equal(row.expires, null, 'default: never expires (JSON null)');
    assert.equal(row.revoked, null);
    assert.ok(Math.abs(Date.parse(row.created) - Date.now()) < 60_000, `created is now: ${row.created}`);
  });

  it('token create --scope and --expires-in are stored as given', LIMIT, async () => {
    const t1 = await runCli([
      'token',
      'create',
      '--owner',
      'reader',
      '--scope',
      'plants:read',
      '--expires-in',
      '30d',
      '--db',
      fx.db,
    ]);
    assert.equal(t1.code, 0, t1.stderr);
    assert.match(t1.stdout.trim(), TOKEN_SHAPE);
    const t2 = await runCli([
      'token',
      'create',
      '--owner',
      'writer',
      '--scope',
      'plants:write',
      '--scope',
      'plants:read',
      '--expires-in',
      '12h',
      '--db',
      fx.db,
    ]);
    assert.equal(t2.code, 0, t2.stderr);
    const rows = await listJson(fx.db);
    const reader = rows.find((t) => t.owner === 'reader');
    const writer = rows.find((t) => t.owner === 'writer');
    assert.ok(reader && writer);
    assert.deepEqual(reader.scopes, ['plants:read']);
    assert.equal(Date.parse(reader.expires!) - Date.parse(reader.created), 30 * 86_400_000);
    assert.deepEqual([...writer.scopes].sort(), ['plants:read', 'plants:write']);
    assert.equal(Date.parse(writer.expires!) - Date.parse(writer.created), 12 * 3_600_000);
  });

  it('token list shows id, owner, scopes, created, expires, revoked and never a secret', LIMIT, async () => {
    const token = await cliToken(fx.db, 'lister');
    const table = await runCli(['token', 'list', '--db', fx.db]);
    const json = await runCli(['token', 'list', '--json', '--db', fx.db]);
    assert.equal(table.code, 0, table.stderr);
    assert.equal(json.code, 0, json.stderr);
    const [header, ...rows] = table.stdout.trimEnd().split('\n');
    assert.deepEqual(header!.trim().split(/\s+/), ['ID', 'OWNER', 'SCOPES', 'CREATED', 'EXPIRES', 'REVOKED']);
    const jsonRows = json.stdout
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    assert.equal(rows.length, jsonRows.length, 'one table row per token');
    for (const r of jsonRows)
      assert.deepEqual(Object.keys(r).sort(), ['created', 'expires', 'id', 'owner', 'revoked', 'scopes']);
    const mine = jsonRows.find((r) => r.owner === 'lister');
    assert.ok(mine);
    assert.ok(rows.some((line) => line.includes(mine.id as string) && line.includes('lister')));
    for (const out of [table.stdout, table.stderr, json.stdout, json.stderr]) {
      for (const form of secretForms(token)) assert.ok(!out.includes(form), `token list leaks ${form}`);
      assert.doesNotMatch(out, TOKEN_ANYWHERE);
    }
  });

  it('token revoke works by token and by id; an unknown one exits 1', LIMIT, async () => {
    const created = async () => {
      const r = await runCli(['token', 'create', '--owner', 'revokee', '--db', fx.db]);
      assert.equal(r.code, 0, r.stderr);
      return { token: r.stdout.trim(), id: /tok_[0-9a-f]+/.exec(r.stderr)![0] };
    };
    const [a, b, c] = await Promise.all([created(), created(), created()]);
    const state = async () =>
      new Map((await listJson(fx.db)).filter((t) => t.owner === 'revokee').map((t) => [t.id, t.revoked]));
    assert.deepEqual([...(await state()).values()], [null, null, null]);

    const r1 = await runCli(['token', 'revoke', a.token, '--db', fx.db]);
    assert.equal(r1.code, 0, r1.stderr);
    let now = await state();
    assert.notEqual(now.get(a.id), null, 'revoked by token');
    assert.ok(Math.abs(Date.parse(now.get(a.id)!) - Date.now()) < 60_000, `revoked is a timestamp: ${now.get(a.id)}`);
    assert.equal(now.get(b.id), null);
    assert.equal(now.get(c.id), null);
    assert.ok(!(r1.stdout + r1.stderr).includes(a.token), 'the token is not echoed');

    const r2 = await runCli(['token', 'revoke', b.id, '--db', fx.db]);
    assert.equal(r2.code, 0, r2.stderr);
    now = await state();
    assert.notEqual(now.get(b.id), null, 'revoked by id');
    assert.equal(now.get(c.id), null, 'the other token stays active');

    const [unknownId, unknownToken] = await Promise.all([
      runCli(['token', 'revoke', 'tok_0000000000000000', '--db', fx.db]),
      runCli(['token', 'revoke', `plnt_${'A'.repeat(43)}`, '--db', fx.db]),
    ]);
    assert.equal(unknownId.code, 1, unknownId.stderr);
    assert.equal(unknownId.stderr, 'plant-store token revoke: no token has the id "tok_0000000000000000"\n');
    assert.equal(unknownToken.code, 1, unknownToken.stderr);
    assert.equal(unknownToken.stderr, 'plant-store token revoke: no token matches the token given\n');
    assert.equal((await state()).get(c.id), null, 'unknown revokes change nothing');
  });

  it('uses DATABASE_URL when --db is absent, and --db wins over it', LIMIT, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'plant-store-env-'));
    after(() => rmSync(dir, { recursive: true, force: true }));
    const fromEnv = await runCli(['token', 'create', '--owner', 'envuser'], { DATABASE_URL: fx.db });
    assert.equal(fromEnv.code, 0, fromEnv.stderr);
    assert.ok(
      (await listJson(fx.db)).some((t) => t.owner === 'envuser'),
      'DATABASE_URL names the store',
    );

    const other = join(dir, 'other.db');
    const flagWins = await runCli(['token', 'create', '--owner', 'flaguser', '--db', fx.db], { DATABASE_URL: other });
    assert.equal(flagWins.code, 0, flagWins.stderr);
    assert.ok(
      (await listJson(fx.db)).some((t) => t.owner === 'flaguser'),
      '--db names the store',
    );
    assert.equal(existsSync(other), false, 'the store DATABASE_URL names was not touched');
  });

  it('--db-file names the store for migrate, token create and token list', LIMIT, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'plant-store-dbfile-'));
    after(() => rmSync(dir, { recursive: true, force: true }));
    const path = join(dir, 'db');
    writeFileSync(path, `${fx.db}\n`, { mode: 0o600 });
    const migrated = await runCli(['migrate', '--json', '--db-file', path]);
    assert.equal(migrated.code, 0, migrated.stderr);
    const again = await runCli(['migrate', '--json', '--db', fx.db]);
    assert.deepEqual(JSON.parse(again.stdout), { applied: [] }, 'the store --db-file names is migrated');
    const created = await runCli(['token', 'create', '--owner', 'fileuser', '--db-file', path]);
    assert.equal(created.code, 0, created.stderr);
    assert.ok(
      (await listJson(fx.db)).some((t) => t.owner === 'fileuser'),
      '--db-file names the store',
    );
    const listed = await runCli(['token', 'list', '--json', '--db-file', path]);
    assert.equal(listed.code, 0, listed.stderr);
    assert.match(listed.stdout, /"owner":"fileuser"/);
  });

  it('bad flags: a clear message on stderr and exit code 2', LIMIT, async () => {
    const cases: [string[], RegExp][] = [
      [['serve', '--bogus'], /bogus/],
      [['serve', '--port', 'abc'], /--port/],
      [['serve', '--port', '70000'], /port/],
      [['serve', '--durability', 'bogus'], /durability/],
      [['serve', '--workers', 'many'], /workers/],
      [['serve', '--log-level', 'loud'], /log-level/],
      [['serve', '--access-log=yes'], /access-log/],
      [['serve', '--slow-request-ms', 'soon'], /slow-request-ms/],
      [['serve', 'extra'], /extra/],
      [['token', 'create', '--owner', 'x', '--scope', 'bogus'], /--scope/],
      [['token', 'create'], /--owner/],
      [['token', 'create', '--owner', 'not a name!'], /owner/],
      [['token', 'create', '--owner', 'x', '--expires-in', 'forever'], /expires-in/],
      [['token', 'list', '--bogus'], /bogus/],
      [['token', 'revoke'], /revoke|token/],
      [['migrate', '--bogus'], /bogus/],
    ];
    // a few at a time: this runs on a small machine
    for (let i = 0; i < cases.length; i += 4) {
      const batch = cases.slice(i, i + 4);
      const results = await Promise.all(batch.map(([args]) => runCli([...args, '--db', fx.db])));
      batch.forEach(([args, mention], j) => assertUsageError(results[j]!, mention, args.join(' ')));
    }
    assert.equal(
      (await listJson(fx.db)).filter((t) => t.owner === 'x').length,
      0,
      'no token was created by a bad command',
    );
  });
});

describeEachStore('plant-store serve', (fx) => {
  useProcessCleanup();
  before(() => migrateWithCli(fx.db));

  it(
    'on a store with no tokens prints one admin token once, with a curl example; the next start prints none',
    LIMIT,
    async () => {
      const server = await serveInProcess(serveArgs(fx.db));
      await server.waitForOutput((_, err) => /curl/.test(err), 5000);
      const tokens = tokensIn(server.stderr);
      assert.ok(tokens.length >= 1, `a token on stderr:\n${server.stderr}`);
      const token = tokens[0]!;
      assert.ok(
        tokens.every((t) => t === token),
        'one token',
      );
      assert.ok(!server.stdout.includes(token), 'the token is not on stdout');
      const curl = server.stderr.split('\n').filter((l) => l.includes('curl'));
      assert.equal(curl.length, 1, 'one curl line');
      assert.ok(curl[0]!.includes(`Bearer ${token}`), curl[0]);
      assert.ok(
        curl[0]!.includes(`${server.url}/plants`),
        `the curl example uses the listening URL ${server.url}: ${curl[0]}`,
      );

      const created = await httpRequest(`${server.url}/plants`, {
        method: 'POST',
        token,
        json: { id: 1, name: 'Fern' },
      });
      assert.equal(created.status, 200, created.body);
      const listed = await httpRequest(`${server.url}/plants`, { token });
      assert.equal(listed.status, 200);
      assert.deepEqual(JSON.parse(listed.body), [{ name: 'Fern' }]);

      server.kill('SIGTERM');
      assert.deepEqual(await server.waitExit(), { code: 0, signal: null });

      const rows = (await runCli(['token', 'list', '--json', '--db', fx.db])).stdout.trim().split('\n');
      assert.equal(rows.length, 1);
      assert.equal((JSON.parse(rows[0]!) as TokenRow).owner, 'admin');

      const second = await serveInProcess(serveArgs(fx.db));
      const ok = await httpRequest(`${second.url}/plants`, { token });
      assert.equal(ok.status, 200, 'the first token still works');
      second.kill('SIGTERM');
      assert.deepEqual(await second.waitExit(), { code: 0, signal: null });
      assert.doesNotMatch(second.stderr, TOKEN_ANYWHERE, 'no token on the second start');
      assert.doesNotMatch(second.stdout, TOKEN_ANYWHERE);
      assert.equal(
        (await runCli(['token', 'list', '--json', '--db', fx.db])).stdout.trim().split('\n').length,
        1,
        'no second token',
      );
    },
  );

  it('logs which store it uses, without a password; with no usable token it says how to make one', LIMIT, async () => {
    // A password in the URL (PostgreSQL here trusts, so any password works).
    const db = fx.kind === 'postgres' ? fx.db.replace('postgres@', 'postgres:s3cret-pw@') : fx.db;
    const token = await cliToken(db, 'soon-revoked');
    const revoked = await runCli(['token', 'revoke', token, '--db', db]);
    assert.equal(revoked.code, 0, revoked.stderr);
    const rows = await listJson(db);
    for (const row of rows.filter((r) => r.revoked === null)) {
      assert.equal((await runCli(['token', 'revoke', row.id, '--db', db])).code, 0);
    }

    const server = await serveInProcess(serveArgs(db));
    server.kill('SIGTERM');
    assert.equal((await server.waitExit()).code, 0);
    const lines = server.logLines();
    const storeLine = lines.find((l) => String(l.msg).startsWith('store: '));
    assert.ok(storeLine, `a store line:\n${server.stdout}`);
    if (fx.kind === 'sqlite') {
      assert.equal(storeLine.msg, `store: SQLite file ${fx.db}`);
    } else {
      const url = new URL(fx.db);
      assert.equal(
        storeLine.msg,
        `store: PostgreSQL database "${url.pathname.slice(1)}" on ${url.hostname}:${url.port || 5432} as user "postgres"`,
      );
    }
    assert.ok(!server.stdout.includes('s3cret-pw') && !server.stderr.includes('s3cret-pw'), 'no password');
    const hint = lines.find((l) => /no usable token/.test(String(l.msg)));
    assert.ok(hint, `a hint when no token is usable:\n${server.stdout}`);
    assert.equal(hint.level, 40, 'at warn');
    assert.match(String(hint.msg), /plant-store token create --owner NAME/);
    assert.doesNotMatch(server.stderr, TOKEN_ANYWHERE, "no new token is made behind the operator's back");
  });

  it('reads PLANTS_HOST and PORT; flags win over PLANTS_HOST, PORT and DATABASE_URL', LIMIT, async () => {
    const token = await cliToken(fx.db, 'envtest');
    const fromEnv = await serveInProcess(['--db', fx.db, '--log-level', 'info'], {
      env: { PLANTS_HOST: '127.0.0.1', PORT: '0' },
    });
    assert.notEqual(fromEnv.port, 8080, 'PORT=0 from the environment picks a free port');
    assert.equal((await httpRequest(`${fromEnv.url}/plants`, { token })).status, 200);
    fromEnv.kill('SIGTERM');
    assert.equal((await fromEnv.waitExit()).code, 0);

    const dir = mkdtempSync(join(tmpdir(), 'plant-store-env-'));
    after(() => rmSync(dir, { recursive: true, force: true }));
    const other = join(dir, 'other.db');
    const flags = await serveInProcess(serveArgs(fx.db), {
      env: { PLANTS_HOST: 'no-such-host.invalid', PORT: 'abc', DATABASE_URL: other },
    });
    assert.equal(
      (await httpRequest(`${flags.url}/plants`, { token })).status,
      200,
      'the --db store, where the token lives',
    );
    flags.kill('SIGTERM');
    assert.equal((await flags.waitExit()).code, 0);
    assert.equal(existsSync(other), false, 'DATABASE_URL was not used');
  });

  it('by default logs lifecycle events and slow requests, not a line per request', LIMIT, async () => {
    const token = await cliToken(fx.db, 'quiet');
    const server = await serveInProcess(serveArgs(fx.db, '--slow-request-ms', '200', '--trust-request-id'));
    for (let i = 0; i < 3; i++) assert.equal((await httpRequest(`${server.url}/plants`, { token })).status, 200);
    // A body that arrives 600 ms after the headers makes a request slow whatever the machine.
    const slow = await new Promise<number>((resolve, reject) => {
      const body = '{"id":1,"name":"Slow"}';
      const req = http.request(
        `${server.url}/plants`,
        {
          method: 'POST',
          headers: {
            authorization: `Bearer ${token}`,
            'content-type': 'application/json',
            'content-length': String(body.length),
            'x-request-id': 'slow-one',
          },
        },
        (res) => resolve(res.resume().statusCode!),
      );
      req.on('error', reject);
      req.write(body.slice(0, 5));
      setTimeout(() => req.end(body.slice(5)), 600);
    });
    assert.equal(slow, 200);
    server.kill('SIGTERM');
    assert.equal((await server.waitExit()).code, 0);

    const lines = server.logLines();
    assert.ok(
      lines.some((l) => /Server listening/.test(String(l.msg))),
      'the listening address is logged',
    );
    assert.ok(
      lines.some((l) => /shutting down/.test(String(l.msg))),
      'shutdown is logged',
    );
    // On a busy machine a GET may be slow too, and then logged as such; none is logged for being made.
    const perRequest = lines.filter((l) => l.reqId !== undefined);
    assert.deepEqual(
      perRequest.filter((l) => l.msg !== 'slow request'),
      [],
      `only slow requests have a line:\n${server.stdout}`,
    );
    const slowOne = perRequest.filter((l) => l.reqId === 'slow-one');
    assert.equal(slowOne.length, 1, `the slow request has its line:\n${server.stdout}`);
    assert.equal(slowOne[0]!.level, 40, 'at warn');
    assert.equal(slowOne[0]!.method, 'POST');
    assert.equal(slowOne[0]!.statusCode, 200);
    // The server's clock starts when the head arrives, a little after the client's timer does.
    assert.ok(Number(slowOne[0]!.responseTime) >= 500, `with its time: ${slowOne[0]!.responseTime}`);
  });

  it(
    'with PLANTS_ACCESS_LOG=true, logs one request line per request with its request id, and never the Authorization header or a token',
    LIMIT,
    async () => {
      const token = await cliToken(fx.db, 'logger');
      const readOnly = await cliToken(fx.db, 'logger', '--scope', 'plants:read');
      const unknown = `plnt_${'Z'.repeat(43)}`;
      const malformed = 'not-a-token-c2VjcmV0LXNob3VsZC1ub3QtbGVhaw';
      const server = await serveInProcess(serveArgs(fx.db), {
        // No slow-request lines: on a busy machine the first request can take a second.
        env: { PLANTS_ACCESS_LOG: 'true', PLANTS_TRUST_REQUEST_ID: 'true', PLANTS_SLOW_REQUEST_MS: '0' },
      });
      const u = server.url;
      const sent: {
        id: string;
        method: string;
        url: string;
        status: number;
        opts: Parameters<typeof httpRequest>[1];
      }[] = [
        {
          id: 'log-create',
          method: 'POST',
          url: '/plants',
          status: 200,
          opts: { token, json: { id: 7, name: 'Ivy', tag: 'vine' } },
        },
        { id: 'log-list', method: 'GET', url: '/plants', status: 200, opts: { token } },
        { id: 'log-unknown', method: 'GET', url: '/plants', status: 401, opts: { token: unknown } },
        { id: 'log-malformed', method: 'GET', url: '/plants', status: 401, opts: { token: malformed } },
        {
          id: 'log-basic',
          method: 'GET',
          url: '/plants',
          status: 401,
          opts: { headers: { authorization: `Basic ${Buffer.from(`u:${token}`).toString('base64')}` } },
        },
        { id: 'log-none', method: 'GET', url: '/plants', status: 401, opts: {} },
        {
          id: 'log-scope',
          method: 'POST',
          url: '/plants',
          status: 403,
          opts: { token: readOnly, json: { id: 8, name: 'Moss' } },
        },
        { id: 'log-delete', method: 'DELETE', url: '/plants/7', status: 204, opts: { token } },
        { id: 'log-missing', method: 'DELETE', url: '/plants/7', status: 404, opts: { token } },
      ];
      for (const s of sent) {
        const res = await httpRequest(`${u}${s.url}`, {
          method: s.method,
          ...s.opts,
          headers: { ...s.opts?.headers, 'x-request-id': s.id },
        });
        assert.equal(res.status, s.status, `${s.id}: ${res.body}`);
        assert.equal(res.headers['x-request-id'], s.id, `${s.id}: the request id is echoed`);
      }
      const anon = await httpRequest(`${u}/plants`, { token });
      const generated = anon.headers['x-request-id'];
      assert.equal(typeof generated, 'string', 'a request without X-Request-Id gets one');

      server.kill('SIGTERM');
      assert.equal((await server.waitExit()).code, 0);

      const requestLines = server
        .logLines()
        .filter((l) => ['request completed', 'request failed', 'slow request'].includes(String(l.msg)));
      assert.equal(requestLines.length, sent.length + 1, `one line per request:\n${server.stdout}`);
      for (const s of [...sent, { id: generated as string, method: 'GET', url: '/plants', status: 200 }]) {
        const lines = requestLines.filter((l) => l.reqId === s.id);
        assert.equal(lines.length, 1, `one log line for ${s.id}`);
        const line = lines[0]!;
        assert.equal(line.level, 30, `${s.id} logged at info`);
        assert.equal(line.method, s.method);
        assert.equal(line.url, s.url);
        assert.equal(line.statusCode, s.status);
      }
      const output = server.stdout + server.stderr;
      for (const secret of [
        token,
        readOnly,
        unknown,
        malformed,
        token.slice(5),
        Buffer.from(`u:${token}`).toString('base64'),
      ]) {
        assert.ok(!output.includes(secret), `the server output contains ${secret}`);
      }
      assert.doesNotMatch(output, /bearer\s/i, 'no Authorization value in the logs');
      assert.doesNotMatch(output, /"authorization"\s*:\s*"(?!\[redacted\])/i);
    },
  );
});

describeEachStore('plant-store serve on a store whose tokens came from the CLI', (fx) => {
  useProcessCleanup();
  before(() => migrateWithCli(fx.db));

  it('creates no bootstrap token when a token exists', LIMIT, async () => {
    const token = await cliToken(fx.db, 'someone');
    const server = await serveInProcess(serveArgs(fx.db));
    assert.equal((await httpRequest(`${server.url}/plants`, { token })).status, 200);
    server.kill('SIGINT');
    assert.deepEqual(await server.waitExit(), { code: 0, signal: null }, 'SIGINT exits 0 too');
    assert.doesNotMatch(server.stderr + server.stdout, TOKEN_ANYWHERE);
    const rows = (await runCli(['token', 'list', '--json', '--db', fx.db])).stdout.trim().split('\n');
    assert.equal(rows.length, 1, 'still only the CLI token');
  });
});
