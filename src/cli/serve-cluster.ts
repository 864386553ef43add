import cluster, { type Worker } from 'node:cluster';
import type { Config } from '../config.js';
import { openStore } from '../store/open-store.js';
import type { CommandContext } from './args.js';
import { announceToken, baseUrl, bootstrapToken } from './bootstrap.js';

/**
 * The primary of `serve --workers N`: migrates the store once, forks N
 * workers that share the listening port, replaces a worker that dies, and on
 * SIGTERM/SIGINT lets every worker drain before exiting 0.
 */
export async function runPrimary(config: Readonly<Config>, ctx: CommandContext): Promise<number> {
  const store = await openStore(config);
  const token = await bootstrapToken(store);
  await store.close();

  let stopping = false;
  const log = (msg: string) => ctx.stderr.write(`${JSON.stringify({ level: 30, time: Date.now(), pid: process.pid, msg })}\n`);
  const fork = () => cluster.fork();
  let listening = 0;
  cluster.on('listening', () => {
    if (++listening === config.workers) {
      log(`${config.workers} workers listening on ${baseUrl(config)}`);
      if (token) announceToken(ctx, token, baseUrl(config));
    }
  });
  cluster.on('exit', (worker: Worker, code, signal) => {
    if (stopping) return;
    log(`worker ${worker.process.pid} exited (${signal ?? code}); starting a new one`);
    setTimeout(fork, 500).unref();
  });
  for (let i = 0; i < config.workers; i++) fork();

  return new Promise<number>((resolve) => {
    const stop = () => {
      if (stopping) return;
      stopping = true;
      log('shutting down: workers finish in-flight requests');
      const workers = Object.values(cluster.workers ?? {}).filter((w): w is Worker => !!w);
      if (workers.length === 0) return resolve(0);
      let left = workers.length;
      let failed = false;
      for (const w of workers) {
        w.once('exit', (code) => {
          if (code !== 0) failed = true;
          if (--left === 0) resolve(failed ? 1 : 0);
        });
        w.process.kill('SIGTERM');
      }
    };
    process.once('SIGTERM', stop);
    process.once('SIGINT', stop);
  });
}
