// Load against a real server process, for the whole-process suites
// (test/slow/kill-9-sigterm-and-workers.test.ts, test/slow/kill-durability-normal.test.ts): client
// loops that record every attempt, and kill -9 under concurrent creates with
// every acknowledged create checked after a restart.
import assert from 'node:assert/strict';
import type { TestContext } from 'node:test';
import http from 'node:http';
import {
  cliToken,
  httpRequest,
  listAllNames,
  serveArgs,
  startServer,
  type HttpResponse,
  type ServerProcess,
} from './server.js';
import { eventually } from './eventually.js';
import { serveInProcess } from './serve-in-process.js';
import type { StoreFixture } from './stores.js';

export interface Outcome {
  id: number;
  reqId: string;
  sentAt: number;
  /** When the request was fully written to the socket (0: never). */
  flushedAt: number;
  /** Whether it went over a connection that earlier requests used. */
  reused?: boolean;
  doneAt: number;
  status?: number;
  body?: string;
  error?: string;
}

/**
 * `clients` loops, each sending one request at a time over a shared keep-alive
 * agent until stop() is called, the queue of ids runs dry, or a request fails
 * at the socket level. Every attempt is recorded.
 */
export function runLoad(opts: {
  clients: number;
  nextId: () => number | undefined;
  send: (id: number, reqId: string, agent: http.Agent, onFlushed: (reused: boolean) => void) => Promise<HttpResponse>;
  /** Keep going after a non-2xx answer (default: stop that client). */
  continueOnStatus?: (status: number) => boolean;
  maxMs: number;
}) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: opts.clients });
  const outcomes: Outcome[] = [];
  const inFlight = new Set<number>();
  let stopped = false;
  const deadline = performance.now() + opts.maxMs;
  const client = async (c: number) => {
    for (let n = 0; !stopped && performance.now() < deadline; n++) {
      const id = opts.nextId();
      if (id === undefined) return;
      const o: Outcome = { id, reqId: `load-${id}-${c}-${n}`, sentAt: performance.now(), flushedAt: 0, doneAt: 0 };
      outcomes.push(o);
      inFlight.add(id);
      try {
        const res = await opts.send(id, o.reqId, agent, (reused) => {
          o.flushedAt = performance.now();
          o.reused = reused;
        });
        o.status = res.status;
        o.body = res.body;
      } catch (error) {
        o.error = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
      } finally {
        o.doneAt = performance.now();
        inFlight.delete(id);
      }
      if (o.error) return;
      if (o.status! >= 300 && !(opts.continueOnStatus?.(o.status!) ?? false)) return;
    }
  };
  const done = Promise.all(Array.from({ length: opts.clients }, (_, c) => client(c))).finally(() => agent.destroy());
  return {
    outcomes,
    inFlight: () => inFlight.size,
    acked: (status: number) => outcomes.filter((o) => o.status === status).length,
    stop: () => {
      stopped = true;
    },
    done,
  };
}

/** A runLoad sender over `url` with `token`: creates plant `id` (POST /plants) or deletes it (DELETE /plants/{id}). */
const sendVia =
  (op: 'create' | 'delete') =>
  (url: string, token: string) =>
  (id: number, reqId: string, agent: http.Agent, onFlushed: (reused: boolean) => void): Promise<HttpResponse> =>
    httpRequest(op === 'create' ? `${url}/plants` : `${url}/plants/${id}`, {
      method: op === 'create' ? 'POST' : 'DELETE',
      ...(op === 'create' ? { json: { id, name: `p-${id}`, tag: 'load' } } : {}),
      token,
      agent,
      onFlushed,
      headers: { 'x-request-id': reqId },
      timeoutMs: 10_000,
    });

export const createVia = sendVia('create');
export const deleteVia = sendVia('delete');

export async function stop(server: ServerProcess): Promise<void> {
  server.kill('SIGTERM');
  assert.deepEqual(await server.waitExit(15_000), { code: 0, signal: null }, `SIGTERM exits 0\n${server.stderr}`);
}

export const SOCKET_ERRORS = new Set(['ECONNRESET', 'ECONNREFUSED', 'EPIPE', 'ECONNABORTED', 'socket hang up']);

/** Kills a server under concurrent creates and checks every acknowledged create after a restart. */
export async function killDuringCreates(t: TestContext, fx: StoreFixture, serverFlags: string[]): Promise<void> {
  const token = await cliToken(fx.db, 'crash-create');
  const server = await startServer([...serveArgs(fx.db), ...serverFlags]);
  let next = 1;
  const load = runLoad({ clients: 16, nextId: () => next++, send: createVia(server.url, token), maxMs: 15_000 });
  // Kill mid-load: once 400 creates are acknowledged, or after 1.5 s with at
  // least 50, however busy the machine (load beyond that only burns CPU).
  const started = performance.now();
  await eventually(
    () => load.acked(200) >= 400 || (load.acked(200) >= 50 && performance.now() - started >= 1500),
    15_000,
    { stepMs: 10, what: '50 acknowledged creates' },
  );
  const inFlight = load.inFlight();
  server.kill('SIGKILL');
  await load.done;
  assert.deepEqual(await server.waitExit(), { code: null, signal: 'SIGKILL' });

  const acked = load.outcomes.filter((o) => o.status === 200).map((o) => o.id);
  const beforeKill = load.outcomes.filter((o) => o.error === undefined);
  assert.ok(inFlight > 0, 'requests were in flight when the process was killed');
  assert.ok(acked.length >= 50, `enough load before the kill: ${acked.length} acknowledged`);
  assert.deepEqual(
    beforeKill.filter((o) => o.status !== 200).map((o) => `${o.id}: ${o.status} ${o.body}`),
    [],
    'every answer before the kill was 200',
  );

  const restarted = await serveInProcess([...serveArgs(fx.db), ...serverFlags]);
  const names = await listAllNames(restarted.url, token);
  await stop(restarted);
  const present = new Set(names);
  assert.equal(present.size, names.length, 'no plant is listed twice');
  const lost = acked.filter((id) => !present.has(`p-${id}`));
  assert.deepEqual(lost, [], `acknowledged creates lost by kill -9 (${lost.length} of ${acked.length})`);
  const attempted = new Set(load.outcomes.map((o) => `p-${o.id}`));
  assert.deepEqual(
    names.filter((n) => !attempted.has(n)),
    [],
    'only attempted plants exist',
  );
  t.diagnostic(
    `kill -9 creates [${fx.kind} ${serverFlags.join(' ')}]: ${acked.length} acknowledged, ${inFlight} in flight at the kill, ${names.length} after restart`,
  );
}
