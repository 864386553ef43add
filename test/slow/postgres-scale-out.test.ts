// Scale-out on PostgreSQL: several servers (`serve`, in this process, each with
// its own pool and caches) on different ports share one database. What one writes the other
// reads, a CLI revocation reaches both within a second, racing creates of one
// id end in one row, and instances starting together migrate safely.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from '../helpers/requirements.js';
import { setTimeout as delay } from 'node:timers/promises';
import {
  cliToken,
  httpRequest,
  runCli,
  serveArgs,
  useProcessCleanup,
  type HttpResponse,
  type ServerProcess,
  stopGracefully,
} from '../helpers/server.js';
import { serveInProcess } from '../helpers/serve-in-process.js';
import { runCliInProcess } from '../helpers/cli.js';
import { postgresMigrations } from '../../src/store/postgres/migrations.postgres.js';
import { createScratchDatabase, expectErrorBody, query } from '../helpers/pg.js';
import { describeOnStore } from '../helpers/stores.js';

const TEST_TIMEOUT = 30_000;

interface Body {
  id: number;
  name: string;
  tag?: string;
}

const owner = (prefix: string) => `${prefix}-${randomBytes(5).toString('hex')}`;
const plantOf = (b: Body) => (b.tag === undefined ? { name: b.name } : { name: b.name, tag: b.tag });

function post(s: ServerProcess, token: string, body: Body): Promise<HttpResponse> {
  return httpRequest(`${s.url}/plants`, { method: 'POST', token, json: body, timeoutMs: 10_000 });
}

async function listNames(
  s: ServerProcess,
  token: string,
  path = '/plants',
): Promise<{ names: string[]; next?: string }> {
  const res = await httpRequest(`${s.url}${path}`, { token, timeoutMs: 10_000 });
  assert.equal(res.status, 200, `GET ${path} on ${s.url}: ${res.body}`);
  const names = (JSON.parse(res.body) as { name: string }[]).map((p) => p.name);
  const link = res.headers.link;
  const m = typeof link === 'string' ? /^<(\/plants\?[^>]+)>; rel="next"$/.exec(link) : null;
  return m ? { names, next: m[1]! } : { names };
}

/** The stored rows of one owner's id, read straight from the database. */
function rowsOf(db: string, who: string, id: number) {
  return query<{ name: string; tag: string | null }>(db, 'SELECT name, tag FROM plants WHERE owner = $1 AND id = $2', [
    who,
    id,
  ]);
}

describeOnStore('postgres', 'scale-out: two server processes on one database', (fx) => {
  describe('servers A and B', () => {
    // The servers live across this suite's tests, so no useProcessCleanup() (it kills after each
    // test); the after() below stops them, and server.ts kills leftovers when the file ends.
    let a: ServerProcess;
    let b: ServerProcess;

    before(async () => {
      [a, b] = await Promise.all([serveInProcess(serveArgs(fx.db)), serveInProcess(serveArgs(fx.db))]);
    });
    after(async () => {
      if (a && b) await stopGracefully(a, b);
    });

    it('listens on two different ports, both ready', { timeout: TEST_TIMEOUT }, async () => {
      assert.notEqual(a.port, b.port);
      for (const s of [a, b]) {
        const res = await httpRequest(`${s.url}/readyz`);
        assert.equal(res.status, 200, `${s.url}/readyz: ${res.body}`);
        assert.deepEqual(JSON.parse(res.body), { status: 'ready' });
      }
    });

    it('what one server writes, the other reads, deletes and replays', { timeout: TEST_TIMEOUT }, async () => {
      const who = owner('share');
      const token = await cliToken(fx.db, who);
      const bodies: Body[] = [1, 2, 3, 4, 5].map((id) => ({
        id,
        name: `p${id}`,
        ...(id % 2 ? { tag: `t${id}` } : {}),
      }));
      for (const body of bodies) {
        const res = await post(a, token, body);
        assert.equal(res.status, 200, res.body);
        assert.deepEqual(JSON.parse(res.body), plantOf(body));
      }
      assert.deepEqual((await listNames(b, token)).names, ['p1', 'p2', 'p3', 'p4', 'p5']);

      const del = await httpRequest(`${b.url}/plants/3`, { method: 'DELETE', token });
      assert.equal(del.status, 204, del.body);
      assert.equal(del.body, '');
      assert.deepEqual((await listNames(a, token)).names, ['p1', 'p2', 'p4', 'p5']);
      expectErrorBody(
        await httpRequest(`${a.url}/plants/3`, { method: 'DELETE', token }),
        404,
        'delete on A of a plant B deleted',
      );

      // Idempotent retry and conflict are judged against the row the other server wrote.
      const replay = await post(b, token, bodies[0]!);
      assert.equal(replay.status, 200, replay.body);
      assert.deepEqual(JSON.parse(replay.body), plantOf(bodies[0]!));
      expectErrorBody(await post(b, token, { id: 1, name: 'p1' }), 409, 'different tag for an id A created');
      expectErrorBody(await post(b, token, { id: 2, name: 'p2', tag: '' }), 409, 'empty tag vs absent tag');
      assert.deepEqual(await rowsOf(fx.db, who, 1), [{ name: 'p1', tag: 't1' }]);
      assert.deepEqual(await rowsOf(fx.db, who, 2), [{ name: 'p2', tag: null }]);
    });

    it('a cursor issued by one server pages on the other', { timeout: TEST_TIMEOUT }, async () => {
      const who = owner('page');
      const token = await cliToken(fx.db, who);
      const expected: string[] = [];
      for (let id = 1; id <= 7; id++) {
        const res = await post(id % 2 ? a : b, token, { id, name: `n${id}` });
        assert.equal(res.status, 200, res.body);
        expected.push(`n${id}`);
      }
      const seen: string[] = [];
      let path: string | undefined = '/plants?limit=2';
      for (let page = 0; path !== undefined; page++) {
        assert.ok(page < 10, 'paging does not end');
        const r: { names: string[]; next?: string } = await listNames(page % 2 ? b : a, token, path);
        assert.ok(r.names.length <= 2);
        seen.push(...r.names);
        path = r.next;
      }
      assert.deepEqual(seen, expected);
    });

    for (const by of ['token', 'id'] as const) {
      it(`a CLI revoke by ${by} is seen by both servers within 1 s`, { timeout: TEST_TIMEOUT }, async () => {
        const who = owner('revoke');
        const created = await runCliInProcess(['token', 'create', '--owner', who, '--db', fx.db]);
        assert.equal(created.code, 0, created.stderr);
        const token = created.stdout.trim();
        const tokenId = /created (tok_[0-9a-f]+) /.exec(created.stderr)?.[1];
        assert.ok(tokenId, `token id in: ${created.stderr}`);

        // Every 50 ms each server is asked, from before the CLI starts until
        // 300 ms past the deadline, so its token cache stays warm throughout.
        interface Probe {
          sentAt: number;
          doneAt: number;
          res: HttpResponse;
        }
        let stopAt = Number.POSITIVE_INFINITY;
        const poll = async (s: ServerProcess): Promise<Probe[]> => {
          const probes: Probe[] = [];
          for (let i = 0; i < 400 && performance.now() < stopAt; i++) {
            const sentAt = performance.now();
            const res = await httpRequest(`${s.url}/plants`, { token, timeoutMs: 5000 });
            probes.push({ sentAt, doneAt: performance.now(), res });
            await delay(50);
          }
          return probes;
        };
        const polls = [poll(a), poll(b)];
        await delay(200);
        const cliStart = performance.now();
        const revoked = await runCli(['token', 'revoke', by === 'token' ? token : tokenId, '--db', fx.db]);
        const deadline = revoked.exitedAt + 1000;
        stopAt = deadline + 300;
        const [probesA, probesB] = await Promise.all(polls);
        assert.equal(revoked.code, 0, `token revoke: ${revoked.stderr}`);

        for (const [label, probes] of [
          ['A', probesA!],
          ['B', probesB!],
        ] as const) {
          const trace = probes.map((p) => `${Math.round(p.sentAt - revoked.exitedAt)}ms:${p.res.status}`).join(' ');
          assert.ok(
            probes.some((p) => p.sentAt < cliStart && p.res.status === 200),
            `${label} accepted the token before the revoke: ${trace}`,
          );
          for (const p of probes)
            assert.ok(p.res.status === 200 || p.res.status === 401, `${label}: ${p.res.status} ${p.res.body}`);
          const first401 = probes.findIndex((p) => p.res.status === 401);
          assert.ok(first401 >= 0, `${label} never answered 401 (relative to CLI exit): ${trace}`);
          assert.ok(
            probes[first401]!.doneAt <= deadline,
            `${label} still accepted the token 1 s after the CLI exited: ${trace}`,
          );
          for (const p of probes.slice(first401)) {
            assert.equal(p.res.status, 401, `${label} accepted a revoked token again: ${trace}`);
            expectErrorBody(p.res, 401, `${label} revoked token`);
            assert.match(String(p.res.headers['www-authenticate']), /error="invalid_token"/);
          }
          assert.ok(probes.at(-1)!.sentAt > deadline, `${label} was polled past the deadline: ${trace}`);
        }
      });
    }

    it(
      '20 concurrent identical creates of one id across both servers: all 200, one row',
      { timeout: TEST_TIMEOUT },
      async () => {
        const who = owner('same');
        const token = await cliToken(fx.db, who);
        const ids = [101, 102, 103, 104, 105];
        for (const id of ids) {
          const body: Body = { id, name: `same${id}`, tag: 'dup' };
          const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => post(i % 2 ? b : a, token, body)));
          for (const res of answers) {
            assert.equal(res.status, 200, `id ${id}: ${res.status} ${res.body}`);
            assert.deepEqual(JSON.parse(res.body), plantOf(body));
          }
          assert.deepEqual(await rowsOf(fx.db, who, id), [{ name: `same${id}`, tag: 'dup' }]);
        }
        const expected = ids.map((id) => `same${id}`);
        assert.deepEqual((await listNames(a, token)).names, expected);
        assert.deepEqual((await listNames(b, token)).names, expected);
      },
    );

    it(
      '20 concurrent different creates of one id across both servers: one row, 200 for it, 409 for the rest',
      { timeout: TEST_TIMEOUT },
      async () => {
        const who = owner('mixed');
        const token = await cliToken(fx.db, who);
        const ids = [201, 202, 203, 204, 205];
        for (const id of ids) {
          const variants: Body[] = [
            { id, name: 'a' },
            { id, name: 'a', tag: 'x' },
            { id, name: 'b' },
            { id, name: 'a', tag: '' },
          ];
          // Each server gets every variant: request i goes to server floor(i / 4) % 2.
          const sent = Array.from({ length: 20 }, (_, i) => variants[i % 4]!);
          const answers = await Promise.all(sent.map((body, i) => post(Math.floor(i / 4) % 2 ? b : a, token, body)));
          const rows = await rowsOf(fx.db, who, id);
          assert.equal(rows.length, 1, `id ${id}: ${JSON.stringify(rows)}`);
          const stored = rows[0]!;
          let ok = 0;
          answers.forEach((res, i) => {
            const body = sent[i]!;
            const matches = body.name === stored.name && (body.tag ?? null) === stored.tag;
            if (matches) {
              ok++;
              assert.equal(
                res.status,
                200,
                `id ${id}, ${JSON.stringify(body)} is the stored row: ${res.status} ${res.body}`,
              );
              assert.deepEqual(JSON.parse(res.body), plantOf(body));
            } else {
              expectErrorBody(
                res,
                409,
                `id ${id}, ${JSON.stringify(body)} differs from the stored ${JSON.stringify(stored)}`,
              );
            }
          });
          assert.equal(ok, 5, `id ${id}: each variant was sent 5 times`);
        }
        assert.equal((await listNames(a, token)).names.length, ids.length);
        assert.equal((await listNames(b, token)).names.length, ids.length);
      },
    );

    it('both servers are still up and stop cleanly on SIGTERM', { timeout: TEST_TIMEOUT }, async () => {
      assert.equal(a.exited, false, a.stderr);
      assert.equal(b.exited, false, b.stderr);
      const errors = [a, b].flatMap((s) => s.logLines().filter((l) => typeof l.level === 'number' && l.level >= 50));
      assert.deepEqual(errors, [], 'error-level log lines');
      for (const s of [a, b]) s.kill('SIGTERM');
      for (const s of [a, b]) assert.deepEqual(await s.waitExit(15_000), { code: 0, signal: null });
    });
  });
});

describeOnStore('postgres', 'scale-out: instances starting together on an empty database', (fx) => {
  describe('concurrent migration', () => {
    useProcessCleanup();
    const scratch: { url: string; drop(): Promise<void> }[] = [];
    after(async () => {
      for (const s of scratch) await s.drop().catch(() => {});
    });

    // Round 1 on the suite's database, rounds 2 and 3 on scratch databases:
    // each time three servers and one `plant-store migrate` start at once.
    for (const round of [1, 2, 3]) {
      it(
        `round ${round}: three servers and a migrate started at once all come up on one schema`,
        { timeout: TEST_TIMEOUT },
        async () => {
          let db = fx.db;
          if (round > 1) {
            const s = await createScratchDatabase();
            scratch.push(s);
            db = s.url;
          }
          const [migrated, ...servers] = await Promise.all([
            runCli(['migrate', '--db', db]),
            serveInProcess(serveArgs(db)),
            serveInProcess(serveArgs(db)),
            serveInProcess(serveArgs(db)),
          ]);
          try {
            assert.equal(migrated!.code, 0, `migrate: ${migrated!.stderr}`);
            const all = Object.keys(postgresMigrations).sort();
            assert.match(migrated!.stderr, new RegExp(`^(applied: ${all.join(', ')}|schema is up to date)\\n$`));
            for (const s of servers) {
              const res = await httpRequest(`${s.url}/readyz`);
              assert.equal(res.status, 200, `${s.url}/readyz: ${res.body}\n${s.stdout}`);
            }
            const applied = await query<{ name: string }>(db, 'SELECT name FROM schema_migrations ORDER BY name');
            assert.deepEqual(
              applied,
              all.map((name) => ({ name })),
            );

            // The schema works through every instance.
            const who = owner('mig');
            const token = await cliToken(db, who);
            for (const [i, s] of servers.entries()) {
              const res = await post(s, token, { id: i + 1, name: `m${i + 1}` });
              assert.equal(res.status, 200, `${s.url}: ${res.body}`);
            }
            for (const s of servers) assert.deepEqual((await listNames(s, token)).names, ['m1', 'm2', 'm3']);
            for (const s of servers) {
              const errors = s.logLines().filter((l) => typeof l.level === 'number' && l.level >= 50);
              assert.deepEqual(errors, [], `${s.url} error-level log lines`);
            }
          } finally {
            await stopGracefully(...servers);
          }
        },
      );
    }
  });
});
