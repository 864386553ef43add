// A full disk for a store: an 8 MiB tmpfs (root only) that a test fills
// until creates answer 503 and frees again. Shared by the one-process check
// (test/hardening/sqlite-disk-faults.test.ts) and the --workers one
// (test/slow/sqlite-disk-full-workers.test.ts).
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, statSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { eventually } from './eventually.js';
import { expectErrorBody } from './pg.js';
import { requirement } from './requirements.js';
import { serveInProcess } from './serve-in-process.js';
import {
  httpRequest,
  listAllNames,
  serveArgs,
  startServer,
  stopGracefully,
  tokensIn,
  type HttpResponse,
  type ServerProcess,
} from './server.js';

const IS_ROOT = process.getuid?.() === 0;

// Disk full needs a small file system of its own: a tmpfs, which only root may mount.
export const tmpfs = await requirement('root, to mount a small tmpfs for a full disk', () => {
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

export async function create(
  server: ServerProcess,
  token: string,
  id: number,
  name = `p-${id}`,
): Promise<HttpResponse> {
  return httpRequest(`${server.url}/plants`, { method: 'POST', token, json: { id, name } });
}

export const readyz = async (server: ServerProcess) => (await httpRequest(`${server.url}/readyz`)).status;

/**
 * Serves a store on an 8 MiB tmpfs (with `extra` flags), fills the disk
 * until a create answers 503, frees it again, and hands over to `recover`.
 * Acknowledged writes are then checked to be all there.
 */
export async function diskFull(
  dir: string,
  extra: string[],
  recover: (server: ServerProcess, answer: (id: number) => Promise<HttpResponse>) => Promise<void>,
): Promise<void> {
  const mnt = mkdtempSync(join(dir, 'disk-'));
  execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=8m', 'tmpfs', mnt]);
  let server: ServerProcess | undefined;
  try {
    const db = join(mnt, 'plants.db');
    const workers = extra.includes('--workers');
    server = workers
      ? await startServer(serveArgs(db, ...extra), { listeners: 2 })
      : await serveInProcess(serveArgs(db));
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
      await eventually(async () => (await answer(more++)).status === 503 && (await readyz(server!)) === 503, 5000, {
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
export async function readyAfterFirstWrite(
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
