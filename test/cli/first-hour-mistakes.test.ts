// The mistakes people make in their first hour with plant-store, each answered
// in one clear line: a --db that is not what they meant, a folder that cannot
// hold the database, and PostgreSQL that cannot be reached as given.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { after, before, describe, it, needs, requirement } from '../helpers/requirements.js';
import { privateClusterProblem } from '../helpers/pg-cluster.js';
import { useApp } from '../helpers/app.js';
import { runCliInProcess as cli } from '../helpers/cli.js';
import { jsonLines, runCli as spawnCli, stopGracefully, useProcessCleanup, type CliResult } from '../helpers/server.js';
import { serveInProcess } from '../helpers/serve-in-process.js';
import { PG_URL, describeHttpLayer, describeOnStore, withDatabase } from '../helpers/stores.js';
import { freePort } from '../helpers/ports.js';

const run = promisify(execFile);
const LIMIT = { timeout: 30_000 };

function assertOneLine(r: CliResult, code: number, mention: RegExp, what: string): void {
  assert.equal(r.code, code, `${what}: exit code (stderr: ${r.stderr})`);
  assert.equal(r.stdout, '', `${what}: nothing on stdout`);
  assert.equal(r.stderr.trim().split('\n').length, 1, `${what}: one line:\n${r.stderr}`);
  assert.match(r.stderr, mention, `${what}: ${r.stderr}`);
  assert.doesNotMatch(r.stderr, /\n\s+at |migration/, `${what}: no stack, not called a migration failure`);
}

describe('--db that is not what the operator meant', () => {
  useProcessCleanup();
  const dir = mkdtempSync(join(tmpdir(), 'plant-store-db-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it(
    'a URL of another scheme, or a mistyped postgres one, is refused with exit 2 and touches nothing',
    LIMIT,
    async () => {
      for (const db of [
        'mysql://root:hunter2@localhost/plants',
        'postgres:/localhost/plants',
        'postgresql//localhost/x',
      ]) {
        for (const args of [['migrate'], ['token', 'list'], ['serve']]) {
          const r = await cli([...args, '--db', db]);
          assertOneLine(r, 2, /--db looks like .*postgres:\/\/.*postgresql:\/\//, `${args.join(' ')} --db ${db}`);
          assert.ok(!r.stderr.includes('hunter2'));
        }
        const fromEnv = await cli(['migrate'], { DATABASE_URL: db });
        assertOneLine(fromEnv, 2, /^plant-store migrate: DATABASE_URL looks like/, `DATABASE_URL=${db}`);
      }
      assert.equal(existsSync('postgresql'), false, 'no folder was made from a mistyped URL');
      assert.equal(existsSync('postgres:'), false);
    },
  );

  it('a --db under /proc fails at once, naming the folder, instead of spinning', LIMIT, async () => {
    // A real process: the old failure was a busy loop that only a kill ends.
    const r = await spawnCli(['migrate', '--db', '/proc/plant-store-test/plants.db'], {}, 10_000);
    assertOneLine(r, 1, /cannot create the folder \/proc\/plant-store-test/, '/proc');
  });

  it('a --db whose parent is a file or an unwritable folder names the path', LIMIT, async () => {
    const file = join(dir, 'a-file');
    writeFileSync(file, 'x');
    assertOneLine(
      await cli(['migrate', '--db', join(file, 'sub', 'plants.db')]),
      1,
      new RegExp(`${file} is not a folder`),
      'parent is a file',
    );
    const locked = join(dir, 'locked');
    await run('mkdir', [locked]);
    chmodSync(locked, 0o555);
    const r = await cli(['migrate', '--db', join(locked, 'plants.db')]);
    if (process.getuid?.() === 0) {
      // root may write anywhere: the folder check passes and the database is made
      assert.equal(r.code, 0, r.stderr);
    } else {
      assertOneLine(r, 1, new RegExp(`the folder ${locked} is not writable`), 'unwritable folder');
    }
  });

  it('token commands on a SQLite file that does not exist say how to create it', LIMIT, async () => {
    const db = join(dir, 'missing.db');
    const r = await cli(['token', 'list', '--db', db]);
    assertOneLine(r, 1, new RegExp(`no SQLite database at ${db}.*plant-store migrate --db`), 'missing file');
    assert.equal(existsSync(db), false);
  });
});

describe('serve on a --db where no store is', () => {
  const dir = mkdtempSync(join(tmpdir(), 'plant-store-new-store-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it(
    'a path whose folder does not exist is refused with exit 2, naming the folder; nothing is created',
    LIMIT,
    async () => {
      const db = join(dir, 'dtaa', 'plants.db');
      const r = await cli(['serve', '--db', db, '--port', '0']);
      assertOneLine(
        r,
        2,
        new RegExp(
          `^plant-store serve: --db ${db}: the folder ${join(dir, 'dtaa')} does not exist, so no store is there; .*plant-store migrate --db ${db}\\n$`,
        ),
        'missing folder',
      );
      assert.equal(existsSync(join(dir, 'dtaa')), false, 'no folder was made');
      // migrate creates a store there on purpose, folders and all; serve then uses it.
      const migrated = await cli(['migrate', '--db', db]);
      assert.equal(migrated.code, 0, migrated.stderr);
      assert.equal(existsSync(db), true);
    },
  );

  it(
    'a new file in an existing folder: serve says plainly that it created a new, empty store, and where',
    LIMIT,
    async () => {
      const db = join(dir, 'fresh.db');
      const first = await serveInProcess(['--db', db, '--port', '0', '--log-level', 'info']);
      await stopGracefully(first);
      assert.match(
        first.stderr,
        new RegExp(`A new, empty store was created: the SQLite file ${db}\\.\nNo tokens existed`),
      );
      const line = jsonLines(first.stdout).find((l) => String(l.msg).startsWith('store:'));
      assert.equal(
        line?.msg,
        `store: created a new, empty SQLite file ${db} (none was there; if you meant an existing store, stop and check --db)`,
      );
      assert.equal(line?.created, true);
      // The second start finds it: no such words.
      const second = await serveInProcess(['--db', db, '--port', '0', '--log-level', 'info']);
      await stopGracefully(second);
      assert.doesNotMatch(second.stderr + second.stdout, /created a new|A new, empty store/);
      assert.equal(
        jsonLines(second.stdout).find((l) => String(l.msg).startsWith('store:'))?.msg,
        `store: SQLite file ${db}`,
      );
    },
  );

  it('a file that is no SQLite database is named', LIMIT, async () => {
    const db = join(dir, 'notes.txt');
    writeFileSync(db, 'shopping list\n'.repeat(300));
    for (const args of [['serve', '--port', '0'], ['migrate'], ['token', 'list']]) {
      const r = await cli([...args, '--db', db]);
      assertOneLine(
        r,
        1,
        new RegExp(
          `^plant-store ${args[0] === 'token' ? 'token list' : args[0]}: cannot use ${db} as the SQLite database: file is not a database\\n$`,
        ),
        args.join(' '),
      );
    }
  });
});

describeOnStore('postgres', 'PostgreSQL that cannot be used as given', () => {
  const pg = new URL(PG_URL);

  it('a missing database: one line with a createdb hint', LIMIT, async () => {
    const name = `plant_store_missing_${process.pid}`;
    const r = await cli(['migrate', '--db', withDatabase(PG_URL, name)]);
    assertOneLine(
      r,
      1,
      new RegExp(
        `has no database "${name}"; create it with: createdb -h ${pg.hostname} -p ${pg.port || 5432}.* ${name}$`,
        'm',
      ),
      'missing database',
    );
    const serve = await cli(['serve', '--port', '0', '--db', withDatabase(PG_URL, name)]);
    assertOneLine(serve, 1, /^plant-store serve: PostgreSQL at .* has no database/, 'serve');
  });

  it('a port nothing listens on: connection refused, naming host and port', LIMIT, async () => {
    const port = await freePort();
    const r = await cli(['token', 'list', '--db', `postgres://postgres@127.0.0.1:${port}/postgres`]);
    assertOneLine(
      r,
      1,
      new RegExp(`cannot connect to PostgreSQL at 127\\.0\\.0\\.1:${port}: connection refused`),
      'port',
    );
  });

  it('a host that does not exist: host not found', LIMIT, async () => {
    const r = await cli(['migrate', '--db', 'postgres://postgres@no-such-host.invalid:5432/postgres']);
    assertOneLine(r, 1, /host "no-such-host\.invalid" not found/, 'host');
  });
});

/** A private PostgreSQL that checks passwords (the shared one trusts everyone). */
async function passwordCluster(): Promise<{ url: (password: string) => string; stop(): Promise<void> }> {
  if (process.getuid?.() !== 0) throw new Error('needs root to run initdb as the postgres user');
  const dir = mkdtempSync(join(tmpdir(), 'plant-store-pgpw-'));
  chmodSync(dir, 0o777);
  const data = join(dir, 'data');
  const pwfile = join(dir, 'pw');
  writeFileSync(pwfile, 'right-password\n');
  chmodSync(pwfile, 0o644);
  const as = (cmd: string, args: string[]) =>
    run('runuser', ['-u', 'postgres', '--', cmd, ...args], { timeout: 60_000 });
  const port = await freePort();
  await as('initdb', ['-D', data, '-U', 'postgres', '--auth=scram-sha-256', `--pwfile=${pwfile}`, '--no-sync']);
  await as('pg_ctl', [
    '-D',
    data,
    '-w',
    '-l',
    join(dir, 'log'),
    '-o',
    `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off`,
    'start',
  ]);
  return {
    url: (password) => `postgres://postgres:${password}@127.0.0.1:${port}/postgres`,
    async stop() {
      await as('pg_ctl', ['-D', data, '-m', 'immediate', 'stop']).catch(() => {});
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

// initdb and pg_ctl (as the postgres user when root) make a cluster that checks passwords.
const clusterMissing = await requirement('a private PostgreSQL cluster', () => {
  const problem = privateClusterProblem();
  if (problem) throw new Error(problem);
});

needs(clusterMissing, () =>
  describe('PostgreSQL with a wrong password', () => {
    let cluster: Awaited<ReturnType<typeof passwordCluster>> | undefined;
    let problem: string | undefined;
    before(async () => {
      try {
        cluster = await passwordCluster();
      } catch (error) {
        problem = (error as Error).message.split('\n')[0];
      }
    });
    after(() => cluster?.stop());

    it('one line naming the user, without the password', { timeout: 90_000 }, async () => {
      assert.ok(cluster, `a private PostgreSQL could not be started: ${problem}`);
      const ok = await cli(['migrate', '--db', cluster.url('right-password')]);
      assert.equal(ok.code, 0, `the right password works: ${ok.stderr}`);
      const r = await cli(['migrate', '--db', cluster.url('wrong-password')]);
      assertOneLine(r, 1, /PostgreSQL at 127\.0\.0\.1:\d+ refused the password for user "postgres"/, 'password');
      assert.ok(!r.stderr.includes('wrong-password'));
    });
  }),
);

describe('enum flags', () => {
  it('name their allowed values', LIMIT, async () => {
    assertOneLine(
      await cli(['serve', '--durability', 'fast']),
      2,
      /--durability must be one of full, normal, got "fast"/,
      'durability',
    );
    assertOneLine(
      await cli(['serve', '--log-level', 'verbose']),
      2,
      /--log-level must be one of fatal, error, warn, info, debug, trace, silent, got "verbose"/,
      'log-level',
    );
  });
});

describeHttpLayer('401 answers say how to get a token', (fx) => {
  const h = useApp(fx);
  it('the same hint whether or not the store has tokens, so it reveals nothing', async () => {
    const ask = async () => {
      const missing = await h.request({ method: 'GET', url: '/plants' });
      const unknown = await h.request({ method: 'GET', url: '/plants', token: `plnt_${'A'.repeat(43)}` });
      return [missing, unknown].map((r) => {
        assert.equal(r.statusCode, 401);
        return (JSON.parse(r.body) as { message: string }).message;
      });
    };
    const before = await ask();
    for (const message of before) assert.match(message, /plant-store token create --owner NAME/);
    await h.token('someone');
    assert.deepEqual(await ask(), before, 'the store now has a token; the answers are the same');
  });
});
