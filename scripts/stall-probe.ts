// node dist/scripts/stall-probe.js: how much one kind of costly request
// stalls everyone else. Starts the service in this process on a SQLite file,
// has 4 concurrent senders post authenticated 1 MiB bodies holding one long
// JSON string for a few seconds, and reports the event-loop delay
// (perf_hooks.monitorEventLoopDelay) and the latency of GET /healthz measured
// meanwhile from a fifth connection. The senders run on a worker thread, so
// that only the server's work shows in the delay. Flags: --seconds N, --senders N.
import { request as httpRequest, Agent } from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import { parseArgs } from 'node:util';
import type { AddressInfo } from 'node:net';
import { buildApp } from '../src/app/app.js';
import { issueToken } from '../src/auth/tokens.js';
import { loadConfig } from '../src/config.js';
import { openStore } from '../src/store/open-store.js';

interface Target {
  port: number;
  token: string;
}

function send({ port, token }: Target, path: string, agent: Agent, payload?: Buffer): Promise<number> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const req = httpRequest(
      {
        host: '127.0.0.1',
        port,
        path,
        agent,
        method: payload ? 'POST' : 'GET',
        headers: payload
          ? { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'content-length': payload.length }
          : {},
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve(performance.now() - started));
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}

/** The worker: `senders` connections posting the costly body until `untilMs` (Date.now()). */
async function attack(target: Target, senders: number, untilMs: number): Promise<number> {
  const body = Buffer.from(JSON.stringify({ id: 1, name: 'x'.repeat(1024 * 1024 - 30) }));
  let sent = 0;
  await Promise.all(
    Array.from({ length: senders }, async () => {
      const agent = new Agent({ keepAlive: true, maxSockets: 1 });
      while (Date.now() < untilMs) {
        await send(target, '/plants', agent, body);
        sent++;
      }
      agent.destroy();
    }),
  );
  return sent;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: { seconds: { type: 'string', default: '5' }, senders: { type: 'string', default: '4' } },
  });
  const seconds = Number(values.seconds);
  const senders = Number(values.senders);
  const dir = mkdtempSync(join(tmpdir(), 'plant-store-stall-'));
  const config = loadConfig({ db: join(dir, 'plants.db'), 'log-level': 'silent', port: '0' }, {});
  const store = await openStore(config);
  const app = await buildApp(config, { store });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const target = {
    port: (app.server.address() as AddressInfo).port,
    token: (await issueToken(store.tokens, { owner: 'stall' })).token,
  };
  try {
    await phase(target, 'idle', seconds, 0);
    await phase(target, `${senders} senders of 1 MiB one-string bodies`, seconds, senders);
  } finally {
    await app.close();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

const quantile = (sorted: number[], q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
const ms = (n: number) => `${n.toFixed(1)} ms`;

async function phase(target: Target, label: string, seconds: number, senders: number): Promise<void> {
  const untilMs = Date.now() + seconds * 1000;
  const until = performance.now() + seconds * 1000;
  const delay = monitorEventLoopDelay({ resolution: 1 });
  delay.enable();
  const worker =
    senders > 0 ? new Worker(new URL(import.meta.url), { workerData: { target, senders, untilMs } }) : undefined;
  const sent = worker
    ? new Promise<number>((resolve, reject) => worker.once('message', resolve).once('error', reject))
    : Promise.resolve(0);
  const probeAgent = new Agent({ keepAlive: true, maxSockets: 1 });
  const health: number[] = [];
  while (performance.now() < until) {
    health.push(await send(target, '/healthz', probeAgent));
    await new Promise((r) => setTimeout(r, 20));
  }
  const attackBodies = await sent;
  probeAgent.destroy();
  delay.disable();
  health.sort((a, b) => a - b);
  console.log(
    `${label}: attack bodies ${attackBodies}; /healthz p50 ${ms(quantile(health, 0.5))} p99 ${ms(quantile(health, 0.99))} ` +
      `max ${ms(health.at(-1)!)}; event-loop delay p50 ${ms(delay.percentile(50) / 1e6)} ` +
      `p99 ${ms(delay.percentile(99) / 1e6)} max ${ms(delay.max / 1e6)}`,
  );
}

if (!isMainThread) {
  const { target, senders, untilMs } = workerData as { target: Target; senders: number; untilMs: number };
  parentPort!.postMessage(await attack(target, senders, untilMs));
} else {
  await main();
}
