// A SQLite store that loses its file, cannot write it, or runs out of disk:
// writes answer 503 (never a 200 that is lost, never a bare 500), /readyz says
// not ready, the server recovers by itself once the cause is fixed, and it
// never starts over on an empty file where a store existed. A full disk under
// serve --workers 2 is in test/slow/workers-disk-full.test.ts.
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
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { expectErrorBody } from '../helpers/pg.js';
import { after, before, describe, it, needs, requirement } from '../helpers/requirements.js';
import {
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
import { diskFull, readyAfterFirstWrite, readyz, tmpfs } from '../helpers/disk-full.js';

const IS_ROOT = process.getuid?.() === 0;
const NOBODY = 65534;

// Root may write any file, so as root the server runs as nobody to meet a read-only file.
const dropPrivileges = await requirement('setpriv, to run the server as nobody (running as root)', () => {
  if (IS_ROOT) execFileSync('setpriv', ['--version'], { stdio: 'ignore' });
});

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
    it('disk full: 503 with Retry-After (never 500), not ready, then ready within 1 s of the first write that succeeds', async () => {
      await diskFull(newDir(), [], (server, answer) => readyAfterFirstWrite(server, answer, 1));
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
