// Two `serve` processes (not workers) on one SQLite file: with the poll at a
// minute, a write through either reaches a live stream on the other within
// a second, told through the signal folder beside the file.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readEventStream, type ServerSentEvent } from '../../packages/client/src/event-stream.js';
import { describe, it } from '../helpers/requirements.js';
import { issueToken } from '../../src/auth/tokens.js';
import { openStore } from '../../src/store/open-store.js';
import {
  httpRequest,
  serveArgs,
  startServer,
  stopGracefully,
  useProcessCleanup,
  type ServerProcess,
} from '../helpers/server.js';

/** A live stream on `url`; `next(ms)` is its next event, or undefined when none came within `ms`. */
async function follow(url: string, token: string) {
  const controller = new AbortController();
  const response = await fetch(`${url}/plants/events`, {
    headers: { authorization: `Bearer ${token}` },
    signal: controller.signal,
  });
  assert.equal(response.status, 200);
  const events = readEventStream(response.body!);
  let pending: Promise<IteratorResult<ServerSentEvent>> | undefined;
  return {
    async next(ms: number): Promise<ServerSentEvent | undefined> {
      pending ??= events.next();
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), ms)));
      const got = await Promise.race([pending, late]).finally(() => clearTimeout(timer));
      if (got === undefined) return undefined;
      pending = undefined;
      return got.done ? undefined : got.value;
    },
    close: () => controller.abort(),
  };
}

describe('live events across two serve processes on one SQLite file', () => {
  useProcessCleanup();

  it('a write through either process reaches a stream on the other within 1 s, with the poll at 60 s', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'plant-instances-'));
    const db = join(dir, 'plants.db');
    const servers: ServerProcess[] = [];
    try {
      // Made in this process: two CLI processes fewer to start.
      const store = await openStore({ db, durability: 'full', pgPoolSize: 1, pgStatementTimeoutMs: 0 });
      const { token } = await issueToken(store.tokens, { owner: 'both' }).finally(() => store.close());
      const starting = [0, 1].map(() => startServer(serveArgs(db, '--events-poll-ms', '60000')));
      for (const s of await Promise.allSettled(starting)) if (s.status === 'fulfilled') servers.push(s.value);
      assert.equal(servers.length, 2, 'both servers started');
      const [one, two] = servers as [ServerProcess, ServerProcess];
      const onOne = await follow(one.url, token);
      const onTwo = await follow(two.url, token);
      try {
        for (const [id, through, other] of [
          [1, one, onTwo],
          [2, two, onOne],
          [3, one, onTwo],
        ] as const) {
          const res = await httpRequest(`${through.url}/plants`, {
            method: 'POST',
            token,
            json: { id, name: `p${id}` },
          });
          assert.equal(res.status, 200, res.body);
          const event = await other.next(1000);
          assert.match(event?.data ?? 'nothing within 1 s', new RegExp(`"id":${id}\\b`), `plant ${id}`);
          // The writing process's own stream has it too (woken by the write itself).
          const own = through === one ? onOne : onTwo;
          assert.match((await own.next(1000))?.data ?? 'nothing within 1 s', new RegExp(`"id":${id}\\b`));
        }
      } finally {
        onOne.close();
        onTwo.close();
      }
    } finally {
      await stopGracefully(...servers);
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
