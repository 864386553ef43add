// A SQLite store that loses its file, cannot write it, or runs out of disk:
// writes answer 503 (never a 200 that is lost, never a bare 500), /readyz says
// not ready, the server recovers by itself once the cause is fixed, and it
// never starts over on an empty file where a store existed.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import {
  chmodSync,
  chownSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  renameSync,
  rmSync,
  statSync,
  truncateSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { expectErrorBody } from '../helpers/pg.js';
import { after, before, describe, it, needs, requirement } from '../helpers/requirements.js';
import {
  adminUrlOf,
  httpRequest,
  listAllNames,
  serveArgs,
  startServer,
  stopGracefully,
  tokensIn,
  useProcessCleanup,
  type HttpResponse,
  type ServerProcess,
} from '../helpers/server.js';
import { runCliInProcess } from '../helpers/cli.js';
import { eventually } from '../helpers/eventually.js';
import { serveInProcess } from '../helpers/serve-in-process.js';

const IS_ROOT = process.getuid?.() === 0;
const NOBODY = 65534;

// Disk full needs a small file system of its own: a tmpfs, which only root may mount.
const tmpfs = await requirement('root, to mount a small tmpfs for a full disk', () => {
  if (!IS_ROOT) throw new Error('not running as root');
  const probe = mkdtempSync(join(tmpdir(), 'plant-store-mount-'));
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', probe], { stdio: 'pipe' });
    execFileSync('umount', [probe]);
  } catch (error) {
    throw new Error(`mount -t tmpfs failed: ${String((error as { stderr?: Buffer }).stderr ?? error).trim()}`);
  } finally {
    rmSync(probe, { recursive: true, force: true });
  }
});

// Root may write any file, so as root the server runs as nobody to meet a read-only file.
const dropPrivileges = await requirement('setpriv, to run the server as nobody (running as root)', () => {
  if (IS_ROOT) execFileSync('setpriv', ['--version'], { stdio: 'ignore' });
});

/** Polls `attempt` every 100 ms until it returns true, for at most `ms`. */
/**
 * Lets nobody reach the code it runs (the built CLI and node_modules): adds
 * search permission for others to each folder above the project that lacks
 * it (a clone in a 0700 temp folder, say). Returns what puts the modes back.
 */
function letNobodyReachTheCode(): () => void {
  const changed: [string, number][] = [];
  for (let d = dirname(fileURLToPath(import.meta.url)); d !== dirname(d); d = dirname(d)) {
    const mode = statSync(d).mode & 0o7777;
    if ((mode & 0o001) === 0) {
      chmodSync(d, mode | 0o001);
      changed.push([d, mode]);
    }
  }
  return () => {
    for (const [d, mode] of changed.reverse()) chmodSync(d, mode);
  };
}

async function create(server: ServerProcess, token: string, id: number, name = `p-${id}`): Promise<HttpResponse> {
  return httpRequest(`${server.url}/plants`, { method: 'POST', token, json: { id, name } });
}

const readyz = async (server: ServerProcess) => (await httpRequest(`${server.url}/readyz`)).status;

/** Starts a server on `db` and returns it with the admin token it printed. */
async function serveNew(db: string, opts: { prefix?: string[] } = {}) {
  // Run as another user (prefix), it needs a process of its own.
  const server = opts.prefix ? await startServer(serveArgs(db), opts) : await serveInProcess(serveArgs(db));
  const token = tokensIn(server.stderr)[0];
  assert.ok(token, `a first token on stderr:\n${server.stderr}`);
  return { server, token };
}

describe('SQLite store faults', () => {
  useProcessCleanup();
  let dir: string;
  let n = 0;
  const newDir = () => {
    const d = join(dir, `case-${++n}`);
    mkdirSync(d);
    return d;
  };
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'plant-store-faults-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('store file deleted while serving: writes 503, not ready, and no new empty store on restart', async () => {
    const db = join(newDir(), 'plants.db');
    const { server, token } = await serveNew(db);
    assert.equal((await create(server, token, 1)).status, 200);
    assert.equal(await readyz(server), 200);

    for (const suffix of ['', '-wal', '-shm']) rmSync(`${db}${suffix}`, { force: true });

    expectErrorBody(await create(server, token, 2), 503, 'create after rm');
    const del = await httpRequest(`${server.url}/plants/1`, { method: 'DELETE', token });
    expectErrorBody(del, 503, 'delete after rm');
    assert.equal(await readyz(server), 503);
    assert.equal((await httpRequest(`${server.url}/healthz`)).status, 200, 'still alive');
    assert.ok(!existsSync(db), 'no new file was created in its place');
    await stopGracefully(server);
    assert.match(server.stdout, /was deleted while the server was using it/, 'the cause is logged');

    const again = await runCliInProcess(['serve', ...serveArgs(db)]);
    assert.equal(again.code, 1, `a restart must refuse:\n${again.stdout}${again.stderr}`);
    assert.match(
      again.stderr,
      /plants\.db is missing, but a store existed there before \(marker file .*\.plants\.db\.marker\)/,
    );
    assert.deepEqual(tokensIn(again.stderr), [], 'no new admin token');
    assert.ok(!existsSync(db));

    // The way out the message names: remove the marker to start a new, empty store.
    rmSync(join(db, '..', '.plants.db.marker'));
    const fresh = await serveNew(db);
    await stopGracefully(fresh.server);
  });

  it('store file replaced while serving: writes 503 and not ready', async () => {
    const d = newDir();
    const db = join(d, 'plants.db');
    const { server, token } = await serveNew(db);
    assert.equal((await create(server, token, 1)).status, 200);
    const other = join(d, 'other.db');
    new Database(other).close();
    renameSync(other, db);
    expectErrorBody(await create(server, token, 2), 503, 'create after the file was replaced');
    assert.equal(await readyz(server), 503);
    await stopGracefully(server);
    assert.match(server.stdout, /was replaced by another file/);
  });

  it('a write-ahead log without its database keeps a new store from being created', async () => {
    const d = newDir();
    const db = join(d, 'plants.db');
    writeFileSync(`${db}-wal`, '');
    const r = await runCliInProcess(['migrate', '--db', db]);
    assert.equal(r.code, 1, r.stderr);
    assert.match(r.stderr, /plants\.db-wal is still there/);
    assert.ok(!existsSync(db));
  });

  // The bug: the writer opens its connection at the first write; opened on a
  // file it may not write, it stayed read-only for good. Root may write any
  // file, so as root the server runs as nobody.
  needs(dropPrivileges, () => {
    it('store file read-only at the first write: 503 with Retry-After, not ready, then recovers by itself', async (t) => {
      const d = newDir();
      const db = join(d, 'plants.db');
      if (IS_ROOT) {
        chmodSync(dir, 0o755); // mkdtemp's 0700 would keep nobody out
        chownSync(d, NOBODY, NOBODY);
      }
      const prefix = IS_ROOT ? ['setpriv', `--reuid=${NOBODY}`, `--regid=${NOBODY}`, '--clear-groups'] : undefined;
      const restoreModes = IS_ROOT ? letNobodyReachTheCode() : () => {};
      t.after(restoreModes);
      const { server, token } = await serveNew(db, prefix ? { prefix } : {});
      chmodSync(db, 0o444);

      const refused = await create(server, token, 1);
      expectErrorBody(refused, 503, 'create on a read-only file');
      assert.equal(refused.headers['retry-after'], '5');
      assert.equal(await readyz(server), 503);

      chmodSync(db, 0o644);
      await eventually(async () => (await create(server, token, 1)).status === 200, 10_000, {
        stepMs: 100,
        what: 'a create succeeds',
      });
      await eventually(async () => (await readyz(server)) === 200, 10_000, { stepMs: 100, what: '/readyz is 200' });
      assert.deepEqual(await listAllNames(server.url, token), ['p-1']);
      await stopGracefully(server);
    });
  });

  needs(tmpfs, () => {
    /**
     * Serves a store on an 8 MiB tmpfs (with `extra` flags), fills the disk
     * until a create answers 503, frees it again, and hands over to `recover`.
     * Acknowledged writes are then checked to be all there.
     */
    async function diskFull(
      extra: string[],
      recover: (server: ServerProcess, answer: (id: number) => Promise<HttpResponse>) => Promise<void>,
    ): Promise<void> {
      const mnt = newDir();
      execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=8m', 'tmpfs', mnt]);
      let server: ServerProcess | undefined;
      try {
        const db = join(mnt, 'plants.db');
        const workers = extra.includes('--workers');
        server = workers ? await startServer(serveArgs(db, ...extra), { listeners: 2 }) : (await serveNew(db)).server;
        const token = tokensIn(server.stderr)[0]!;
        const acked = new Set<number>();
        const answer = async (id: number) => {
          const res = await create(server!, token, id, `p-${id}-${'x'.repeat(240)}`);
          if (res.status === 200) acked.add(id);
          else expectErrorBody(res, 503, `create ${id}`);
          return res;
        };
        for (let id = 1; id <= 20; id++) assert.equal((await answer(id)).status, 200);

        const filler = join(mnt, 'filler');
        const chunk = Buffer.alloc(64 * 1024, 1);
        try {
          for (let i = 0; ; i++) writeFileSync(filler, chunk, { flag: 'a' });
        } catch (error) {
          assert.equal((error as NodeJS.ErrnoException).code, 'ENOSPC');
        }

        let full: HttpResponse | undefined;
        for (let id = 21; id < 5000 && full === undefined; id += 8) {
          const batch = await Promise.all(Array.from({ length: 8 }, (_, k) => answer(id + k)));
          full = batch.find((r) => r.status === 503);
        }
        assert.ok(full, 'writes kept succeeding on a full disk');
        assert.equal(full.headers['retry-after'], '5');
        if (workers) {
          // The worker that answers may be the other one, still committing into log space it already has
          // (the log is written from its start again once checkpointed): it is not ready once its writes fail too.
          let more = 50_000;
          // It reuses log space checkpointed by its own thread until a checkpoint cannot grow the file: seconds more.
          // The workers take connections in turn, so each step writes twice and asks twice: both workers get writes
          // (one write and one ask a step would leave one worker only ever asked, and ready), and both must say 503.
          const failsAndNotReady = async () => {
            const writes = [await answer(more++), await answer(more++)];
            const asks = [await readyz(server!), await readyz(server!)];
            return writes.every((r) => r.status === 503) && asks.every((status) => status === 503);
          };
          await eventually(failsAndNotReady, 15_000, {
            stepMs: 20,
            what: '/readyz to answer 503 on a full disk',
          });
        } else assert.equal(await readyz(server), 503);

        // Room for some writes again, but less than the 1 MiB a store wants before it probes by itself.
        truncateSync(filler, Math.max(0, statSync(filler).size - 700 * 1024));
        await recover(server, answer);
        const names = new Set(await listAllNames(server.url, token));
        for (const id of acked) assert.ok(names.has(`p-${id}-${'x'.repeat(240)}`), `acknowledged plant ${id} lost`);
        await stopGracefully(server);
        assert.doesNotMatch(server.stdout, /"statusCode":500/, 'no 500 was answered');
      } finally {
        await stopGracefully(server);
        execFileSync('umount', ['-l', mnt]);
      }
    }

    /** Once the disk has room again: the first create that succeeds, then /readyz ready within a second of it. */
    async function readyAfterFirstWrite(
      server: ServerProcess,
      answer: (id: number) => Promise<HttpResponse>,
      inARow: number,
      withinMs = 1000,
    ): Promise<void> {
      let id = 100_000;
      await eventually(async () => (await answer(id++)).status === 200, 10_000, {
        stepMs: 20,
        what: 'a create succeeds',
      });
      const wrote = performance.now();
      // inARow answers in a row, so that with --workers every worker has answered ready.
      let ready = 0;
      await eventually(async () => (ready = (await readyz(server)) === 200 ? ready + 1 : 0) >= inARow, withinMs, {
        stepMs: 10,
        what: `/readyz to answer 200 ${inARow} times in a row within ${withinMs} ms of the first successful write`,
      });
      const ms = Math.round(performance.now() - wrote);
      assert.ok(ms <= withinMs, `ready ${ms} ms after the first successful write`);
    }

    it('disk full: 503 with Retry-After (never 500), not ready, then ready within 1 s of the first write that succeeds', async () => {
      await diskFull([], (server, answer) => readyAfterFirstWrite(server, answer, 1));
    });

    it('disk full with --workers 2: every worker is ready again within 1 s of the first write that succeeds, and so is the admin port', async () => {
      // A load balancer's health checks ask all along, as they would in production.
      let checking = true;
      let checks: Promise<void> | undefined;
      await diskFull(['--workers', '2', '--admin-port', '0'], async (server, answer) => {
        // The primary's admin /readyz asks the workers, which are the ones that write.
        const admin = await adminUrlOf(server);
        const notReady = await httpRequest(`${admin}/readyz`);
        expectErrorBody(notReady, 503, 'admin /readyz on a full disk');
        assert.match(notReady.body, /worker \d/);
        checks = (async () => {
          while (checking) {
            await readyz(server);
            await new Promise((r) => setTimeout(r, 100));
          }
        })();
        try {
          // Two workers take connections in turn: 4 in a row is each of them twice. Each worker is ready within 1 s;
          // the four answers in a row that show it for both get another second on a loaded machine.
          await readyAfterFirstWrite(server, answer, 4, 2000);
          const ready = await httpRequest(`${admin}/readyz`);
          assert.equal(ready.status, 200, `admin /readyz once every worker is ready: ${ready.body}`);
        } finally {
          checking = false;
          await checks;
        }
      });
    });
  });

  it('a store file copied back from a backup is served again', async () => {
    const d = newDir();
    const db = join(d, 'plants.db');
    const { server, token } = await serveNew(db);
    assert.equal((await create(server, token, 1)).status, 200);
    await stopGracefully(server);
    copyFileSync(db, join(d, 'backup.db'));
    rmSync(db);
    copyFileSync(join(d, 'backup.db'), db);
    const again = await serveInProcess(serveArgs(db));
    try {
      assert.deepEqual(await listAllNames(again.url, token), ['p-1']);
    } finally {
      await stopGracefully(again);
    }
  });
});
