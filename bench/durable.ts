// The durable reference: the plainest fast SQLite server we could write with the service's three plant routes and the
// same promises. The same bearer check and JSON bodies as the in-memory baseline (baseline.ts), keyset `Link` cursors,
// 409 for another plant under a stored id, and every 2xx write in the write-ahead log and fsynced (WAL,
// synchronous=FULL) before its answer. Writes that arrive while one commit runs share the next one (group commit), and
// the first page of each owner is kept until that owner writes. It is the store's ceiling: what any server answering
// like the service, on the same SQLite and disk, can do.
//
// With --naive it is the obvious version instead (a transaction per write, no kept pages): the bench checks that the
// reference is not slower than it, as minimal.ts checks the baseline.
//   node dist/bench/durable.js PORT ROWS TOKENS_FILE DB_FILE [--naive]   (a token per line, each owner plants 1..ROWS)
import { readFileSync } from 'node:fs';
import Database from 'better-sqlite3';
import Fastify, { type FastifyReply } from 'fastify';
import { plantBody } from './scenarios.js';

type Plant = { name: string; tag?: string };
type Row = { seq: number; name: string; tag: string | null };
/** A write waiting for the next commit, and how to answer it once that commit is on disk. */
type Write =
  | { kind: 'create'; owner: string; id: number; plant: Plant; answer: (status: number, body?: unknown) => void }
  | { kind: 'delete'; owner: string; id: number; answer: (status: number, body?: unknown) => void };

const MAX_LIMIT = 1000;
const [port, rows, tokensFile, file, mode] = process.argv.slice(2);
const naive = mode === '--naive';

const db = new Database(file!);
db.pragma('journal_mode = WAL');
db.exec(`CREATE TABLE plants (seq INTEGER PRIMARY KEY, owner TEXT NOT NULL, id INTEGER NOT NULL, name TEXT NOT NULL,
  tag TEXT, UNIQUE (owner, id));
  CREATE INDEX plants_owner_seq ON plants (owner, seq)`);
const owners = new Map<string, string>(); // owner by Authorization header
const insert = db.prepare('INSERT INTO plants (owner, id, name, tag) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING');
db.transaction(() => {
  for (const [i, token] of readFileSync(tokensFile!, 'utf8').split('\n').entries()) {
    owners.set(`Bearer ${token}`, `owner${i}`);
    for (let id = 1; id <= Number(rows); id++) {
      const { name, tag } = plantBody(id);
      insert.run(`owner${i}`, id, name, tag ?? null);
    }
  }
})();
db.pragma('synchronous = FULL');

const existing = db.prepare<[string, number], Row>('SELECT seq, name, tag FROM plants WHERE owner = ? AND id = ?');
const remove = db.prepare('DELETE FROM plants WHERE owner = ? AND id = ?');
const page = db.prepare<[string, number, number], Row>(
  'SELECT seq, name, tag FROM plants WHERE owner = ? AND seq > ? ORDER BY seq LIMIT ?',
);

/** Runs one write inside the current transaction; the answer it gets once committed. */
function apply(w: Write): [number, unknown?] {
  if (w.kind === 'delete')
    return remove.run(w.owner, w.id).changes === 1 ? [204] : [404, fail(404, `no plant ${w.id}`)];
  if (insert.run(w.owner, w.id, w.plant.name, w.plant.tag ?? null).changes === 1) return [200, w.plant];
  const had = existing.get(w.owner, w.id)!;
  return had.name === w.plant.name && (had.tag ?? undefined) === w.plant.tag
    ? [200, w.plant]
    : [409, fail(409, `plant ${w.id} exists with other content`)];
}

/** Owner -> its first page by limit, as sent: [body, Link]. */
const firstPages = new Map<string, Map<number, [string, string | undefined]>>();
let queue: Write[] = [];
const commitAll = db.transaction((batch: Write[]) => batch.map(apply));
function commit(): void {
  const batch = queue;
  queue = [];
  const answers = commitAll.immediate(batch);
  batch.forEach((w, i) => {
    firstPages.delete(w.owner);
    w.answer(...(answers[i] as [number, unknown?]));
  });
}
function enqueue(w: Write): void {
  if (naive) {
    const [status, body] = apply(w); // autocommit: its own transaction and fsync
    return w.answer(status, body);
  }
  // Requests that arrive while this commit blocks the thread are read after it, and share the next one.
  if (queue.push(w) === 1) setImmediate(commit);
}

const fail = (error: number, message: string) => ({ error, message });
const json = { type: 'object', properties: { name: { type: 'string' }, tag: { type: 'string' } }, required: ['name'] };
const answer = (reply: FastifyReply) => (status: number, body?: unknown) => void reply.code(status).send(body);
const app = Fastify({ logger: false });

type Create = { Body: { id?: unknown; name?: unknown; tag?: unknown } };
app.post<Create>('/plants', { schema: { response: { 200: json } } }, (request, reply) => {
  const owner = owners.get(request.headers.authorization ?? '');
  if (owner === undefined) return reply.code(401).send(fail(401, 'invalid bearer token'));
  const { id, name, tag } = request.body ?? {};
  if (!Number.isSafeInteger(id) || typeof name !== 'string' || (tag !== undefined && typeof tag !== 'string'))
    return reply.code(400).send(fail(400, 'body must be {id: integer, name: string, tag?: string}'));
  enqueue({
    kind: 'create',
    owner,
    id: id as number,
    plant: tag === undefined ? { name } : { name, tag },
    answer: answer(reply),
  });
  return reply;
});

type List = { Querystring: { limit?: string; cursor?: string } };
app.get<List>('/plants', (request, reply) => {
  const owner = owners.get(request.headers.authorization ?? '');
  if (owner === undefined) return reply.code(401).send(fail(401, 'invalid bearer token'));
  const { limit: rawLimit, cursor } = request.query;
  const limit = Math.min(rawLimit === undefined ? MAX_LIMIT : Number(rawLimit), MAX_LIMIT);
  const after = cursor === undefined ? 0 : Number(cursor);
  if (!Number.isInteger(limit) || limit < 1 || !Number.isSafeInteger(after) || after < 0)
    return reply.code(400).send(fail(400, 'bad limit or cursor'));
  let sent = cursor === undefined && !naive ? firstPages.get(owner)?.get(limit) : undefined;
  if (!sent) {
    const found = page.all(owner, after, limit + 1);
    const plants = found.slice(0, limit).map((r) => (r.tag === null ? { name: r.name } : { name: r.name, tag: r.tag }));
    const link =
      found.length > limit ? `</plants?limit=${limit}&cursor=${found[limit - 1]!.seq}>; rel="next"` : undefined;
    sent = [JSON.stringify(plants), link];
    if (cursor === undefined && !naive) {
      if (!firstPages.has(owner)) firstPages.set(owner, new Map());
      firstPages.get(owner)!.set(limit, sent);
    }
  }
  if (sent[1] !== undefined) void reply.header('link', sent[1]);
  return reply.type('application/json; charset=utf-8').send(sent[0]);
});

app.delete<{ Params: { id: string } }>('/plants/:id', (request, reply) => {
  const owner = owners.get(request.headers.authorization ?? '');
  if (owner === undefined) return reply.code(401).send(fail(401, 'invalid bearer token'));
  const id = Number(request.params.id);
  if (!Number.isSafeInteger(id)) return reply.code(400).send(fail(400, 'id must be an integer'));
  enqueue({ kind: 'delete', owner, id, answer: answer(reply) });
  return reply;
});

await app.listen({ host: '127.0.0.1', port: Number(port) });
process.once('SIGTERM', () => void app.close().then(() => (db.close(), process.exit(0))));
