// What live events cost a create: the calls its answer makes (the feed's wake, which returns at once without streams,
// and the store's word to the other processes on the file), timed in this process on a real SQLite store against the
// same loop of event-loop turns without them. With no stream open on any process the word is not sent; with one open
// on another process it is one 1-byte write into the signal folder per turn, however many creates the turn answered.
// A list makes none of these calls.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { setImmediate as turn, setTimeout as sleep } from 'node:timers/promises';
import { pino } from 'pino';
import { EventFeed } from '../src/routes/event-feed.js';
import { StreamCredentials } from '../src/routes/stream-credentials.js';
import { openStore } from '../src/store/open-store.js';

const TURNS = 50_000;
const SIGNAL = fileURLToPath(new URL('../src/store/sqlite/event-signal.sqlite.js', import.meta.url));

export interface EventPathCost {
  /** Another process on the file has a stream open: the word is sent. */
  listened: boolean;
  /** Creates answered per turn of the event loop. */
  perTurn: number;
  /** CPU µs per create. */
  us: number;
}

export async function eventPathCost(dir: string, perTurn: number[]): Promise<EventPathCost[]> {
  const db = join(dir, 'event-path.db');
  const store = await openStore({ db, durability: 'full', pgPoolSize: 1, pgStatementTimeoutMs: 0 });
  const log = pino({ level: 'silent' });
  const signal = store.eventSignal!;
  const options = { pollMs: 100, keepaliveMs: 15_000, bufferBytes: 1 << 18, slowMs: 10_000, maxStreams: 1 };
  const feed = new EventFeed(
    store.events,
    { ...options, maxStreamsPerOwner: 1, retentionMs: 86_400_000, maxKept: 1 },
    log,
    new StreamCredentials(store.tokens, 'plants:read', log),
    signal,
  );
  signal.start();
  const cpu = async (creates: number) => {
    const t0 = process.cpuUsage();
    for (let t = 0; t < TURNS; t++) {
      for (let i = 0; i < creates; i++) {
        feed.wake();
        signal.announce();
      }
      await turn();
    }
    const { user, system } = process.cpuUsage(t0);
    return user + system;
  };
  const measure = async (listened: boolean) => {
    await cpu(1); // warm-up
    const empty = Math.min(await cpu(0), await cpu(0));
    const out: EventPathCost[] = [];
    for (const n of perTurn)
      out.push({ listened, perTurn: n, us: (Math.min(await cpu(n), await cpu(n)) - empty) / (TURNS * n) });
    return out;
  };
  // Another process on the same file with a stream open, as far as the folder shows: it listens, as a server does.
  const listener = `import { SqliteEventSignal } from ${JSON.stringify(SIGNAL)};
    const s = new SqliteEventSignal(${JSON.stringify(db)});
    s.listen(() => {});
    process.stdout.write('listening\\n');
    process.once('SIGTERM', () => s.close().then(() => process.exit(0)));
    setInterval(() => {}, 1000);`;
  const quiet = await measure(false);
  const other = spawn(process.execPath, ['--input-type=module', '-e', listener], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  try {
    await once(other.stdout, 'data');
    await sleep(100); // its marker seen here
    return [...quiet, ...(await measure(true))];
  } finally {
    other.kill('SIGTERM');
    await once(other, 'exit');
    feed.close();
    await store.close();
  }
}
