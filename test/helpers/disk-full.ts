// A SQLite store on a disk that fills up: serves it on a small tmpfs of its
// own, fills the disk until a create answers 503, frees some of it again and
// hands over to the test, then checks that every acknowledged write is there.
// Shared by test/hardening/sqlite-disk-faults.test.ts (one process) and
// test/slow/workers-disk-full.test.ts (serve --workers 2).
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, statSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expectErrorBody } from './pg.js';
import { requirement } from './requirements.js';
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
import { eventually } from './eventually.js';
import { serveInProcess } from './serve-in-process.js';

/** Why a full disk cannot be made here, if it cannot: it needs a small tmpfs, which only root may mount. */
export const tmpfs = await requirement('root, to mount a small tmpfs for a full disk', () => {
  if (process.getuid?.() !== 0) throw new Error('not running as root');
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

export const readyz = async (server: ServerProcess) => (await httpRequest(`${server.url}/readyz`)).status;

/**
 * Serves a store on an 8 MiB tmpfs mounted on `mnt` (with `extra` flags: with
 * --workers as a real cluster, else in-process), fills the disk until a create
 * answers 503, frees it again, and hands over to `recover`. Acknowledged
 * writes are then checked to be all there.
 */
export async function diskFull(
  mnt: string,
  extra: string[],
  recover: (server: ServerProcess, answer: (id: number) => Promise<HttpResponse>) => Promise<void>,
): Promise<void> {
  execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=8m', 'tmpfs', mnt]);
  let server: ServerProcess | undefined;
  try {
    const db = join(mnt, 'plants.db');
    const workers = extra.includes('--workers');
    server = workers
      ? await startServer(serveArgs(db, ...extra), { listeners: 2 })
      : await serveInProcess(serveArgs(db, ...extra));
    const token = tokensIn(server.stderr)[0];
    assert.ok(token, `a first token on stderr:\n${server.stderr}`);
    const acked = new Set<number>();
    const answer = async (id: number) => {
      const name = `p-${id}-${'x'.repeat(240)}`;
      const res = await httpRequest(`${server!.url}/plants`, { method: 'POST', token, json: { id, name } });
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
      await eventually(failsAndNotReady, 15_000, { stepMs: 20, what: '/readyz to answer 503 on a full disk' });
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
  await eventually(async () => (await answer(id++)).status === 200, 10_000, { stepMs: 20, what: 'a create succeeds' });
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
