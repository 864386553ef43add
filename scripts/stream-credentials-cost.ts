// node dist/scripts/stream-credentials-cost.js [--db URL] [--streams N] [--seconds N]:
// what checking the credentials of open live streams costs. Starts the service
// in this process (a fresh SQLite file unless --db names a PostgreSQL
// database), opens N streams (1000), each with a token of its own, from a
// worker thread, and reports the server's CPU time per second over --seconds
// (10) while they stay open and idle. Then it runs the check itself (every
// stream's expiry, one lookup of all N tokens) 100 times on the same store
// and reports its CPU time per round and per second at the pace streams are
// checked (every 500 ms).
import { mkdtempSync, rmSync } from 'node:fs';
import { request, Agent } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import { buildApp } from '../src/app/app.js';
import type { Principal } from '../src/auth/principal.js';
import { issueToken } from '../src/auth/tokens.js';
import { loadConfig } from '../src/config.js';
import { CREDENTIALS_CHECK_MS, StreamCredentials } from '../src/routes/stream-credentials.js';
import { openStore } from '../src/store/open-store.js';

interface Opener {
  port: number;
  tokens: string[];
}

/** In the worker: opens one stream per token and keeps them open until told to stop. */
function openStreams({ port, tokens }: Opener): void {
  const agent = new Agent({ keepAlive: false, maxSockets: Infinity });
  let open = 0;
  for (const token of tokens)
    request(
      { port, host: '127.0.0.1', path: '/plants/events', agent, headers: { authorization: `Bearer ${token}` } },
      (res) => {
        if (res.statusCode !== 200) throw new Error(`stream refused: ${res.statusCode}`);
        res.resume();
        if (++open === tokens.length) parentPort!.postMessage('open');
      },
    ).end();
  parentPort!.on('message', () => {
    agent.destroy();
    parentPort!.close();
  });
}

const cpuMs = (since: NodeJS.CpuUsage) => {
  const u = process.cpuUsage(since);
  return (u.user + u.system) / 1000;
};

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: { db: { type: 'string' }, streams: { type: 'string' }, seconds: { type: 'string' } },
  });
  const streams = Number(values.streams ?? 1000);
  const seconds = Number(values.seconds ?? 10);
  const dir = values.db ? undefined : mkdtempSync(join(tmpdir(), 'plant-store-credentials-'));
  const db = values.db ?? join(dir!, 'plants.db');
  const config = {
    ...loadConfig({ db, 'log-level': 'silent' }, {}),
    eventsMaxStreams: streams,
    eventsMaxStreamsPerOwner: streams,
    maxConnections: streams + 100,
  };
  const store = await openStore(config);
  const app = await buildApp(config, { store });
  await app.listen({ host: '127.0.0.1', port: 0 });
  try {
    const issued = [];
    for (let i = 0; i < streams; i++) issued.push(await issueToken(store.tokens, { owner: `watcher-${i % 100}` }));
    const worker = new Worker(new URL(import.meta.url), {
      workerData: { port: (app.server.address() as AddressInfo).port, tokens: issued.map((t) => t.token) },
    });
    await new Promise((resolve, reject) => worker.once('message', resolve).once('error', reject));
    const started = process.cpuUsage();
    await new Promise((r) => setTimeout(r, seconds * 1000));
    const serving = cpuMs(started) / seconds;
    worker.postMessage('stop');
    await new Promise((resolve) => worker.once('exit', resolve));

    const credentials = new StreamCredentials(store.tokens, 'plants:read', app.log);
    for (const { record } of issued) {
      const principal: Principal = {
        kind: 'opaque',
        tokenId: record.id,
        owner: record.owner,
        scopes: record.scopes,
        expiresAt: undefined,
      };
      credentials.watch(principal, () => {
        throw new Error('no credentials end here');
      });
    }
    await credentials.check();
    const rounds = 100;
    const before = process.cpuUsage();
    const wall = performance.now();
    for (let i = 0; i < rounds; i++) await credentials.check();
    const perRound = cpuMs(before) / rounds;
    const wallPerRound = (performance.now() - wall) / rounds;
    credentials.close();
    const perSecond = (perRound * 1000) / CREDENTIALS_CHECK_MS;
    console.log(
      JSON.stringify({
        store: store.kind,
        streams,
        serverCpuMsPerSecondWithStreamsOpen: Number(serving.toFixed(2)),
        checkCpuMsPerRound: Number(perRound.toFixed(3)),
        checkWallMsPerRound: Number(wallPerRound.toFixed(3)),
        checkCpuMsPerSecond: Number(perSecond.toFixed(2)),
        checkShareOfOneCore: `${(perSecond / 10).toFixed(2)}%`,
      }),
    );
  } finally {
    await app.close();
    await store.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  }
}

if (isMainThread) await main();
else openStreams(workerData as Opener);
