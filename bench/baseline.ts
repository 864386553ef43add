// The baseline: the fastest in-memory Fastify server we could write with the service's three plant routes, the same
// bearer check (a token lookup, as a hit in the service's token cache costs), the same JSON bodies, status codes and
// Link cursors, but plants in memory and no logging. Like the durable reference (bench/durable.ts), it keeps each
// owner's first pages serialized until that owner's next write, so that it stays the faster ceiling on lists. bench/minimal.ts checks that it is not slower
// than the smallest server doing a list.
//   node dist/bench/baseline.js PORT ROWS TOKENS_FILE   (a token per line: an owner each, with plants 1..ROWS)
import { readFileSync } from 'node:fs';
import Fastify, { type FastifyReply, type FastifyRequest } from 'fastify';
import { plantBody } from './scenarios.js';

type Plant = { name: string; tag?: string };
/**
 * An owner's plants in insertion order (a deleted one leaves a hole), where each id sits, and its first pages as
 * sent (body and Link) by limit, until its next write.
 */
type Shelf = {
  rows: (Plant | undefined)[];
  at: Map<string, number>;
  firstPages: Map<number, [body: string, link: string | undefined]>;
};
declare module 'fastify' {
  interface FastifyRequest {
    shelf: Shelf;
  }
}

const MAX_LIMIT = 1000;
const plant = ({ name, tag }: { name: string; tag?: string | undefined }): Plant =>
  tag === undefined ? { name } : { name, tag };
const fail = (reply: FastifyReply, error: number, message: string) => reply.code(error).send({ error, message });
const json = { type: 'object', properties: { name: { type: 'string' }, tag: { type: 'string' } }, required: ['name'] };

// In a file, not in the arguments, where anyone on the machine could read them.
const [port, rows, file] = process.argv.slice(2);
const shelves = new Map<string, Shelf>(); // by the Authorization header
for (const token of readFileSync(file!, 'utf8').split('\n')) {
  const shelf: Shelf = { rows: [], at: new Map(), firstPages: new Map() };
  for (let id = 1; id <= Number(rows); id++) shelf.at.set(String(id), shelf.rows.push(plant(plantBody(id))) - 1);
  shelves.set(`Bearer ${token}`, shelf);
}

const app = Fastify({ logger: false });
app.decorateRequest('shelf', null as unknown as Shelf);
// Before the body is read (a hook); a GET has no body, so it checks in its handler and skips the hook's cost.
const authenticate = (request: FastifyRequest, reply: FastifyReply, done: () => void) => {
  const shelf = shelves.get(request.headers.authorization ?? '');
  if (shelf === undefined) return void fail(reply, 401, 'invalid bearer token');
  request.shelf = shelf;
  done();
};

type Create = { Body: { id?: unknown; name?: unknown; tag?: unknown } };
app.post<Create>('/plants', { onRequest: authenticate, schema: { response: { 200: json } } }, (request, reply) => {
  const { id, name, tag } = request.body ?? {};
  if (!Number.isSafeInteger(id) || typeof name !== 'string' || (tag !== undefined && typeof tag !== 'string'))
    return fail(reply, 400, 'body must be {id: integer, name: string, tag?: string}');
  const { rows, at } = request.shelf;
  const [key, created] = [String(id), plant({ name, tag })];
  const i = at.get(key);
  const existing = i === undefined ? undefined : rows[i];
  if (existing && (existing.name !== name || existing.tag !== tag)) return fail(reply, 409, `plant ${key} exists`);
  if (!existing) {
    at.set(key, rows.push(created) - 1);
    request.shelf.firstPages.clear();
  }
  return reply.send(created);
});

type List = { Querystring: { limit?: string; cursor?: string } };
app.get<List>('/plants', (request, reply) => {
  const shelf = shelves.get(request.headers.authorization ?? '');
  if (shelf === undefined) return fail(reply, 401, 'invalid bearer token');
  const { limit: rawLimit, cursor } = request.query;
  const limit = Math.min(rawLimit === undefined ? MAX_LIMIT : Number(rawLimit), MAX_LIMIT);
  const from = cursor === undefined ? 0 : Number(cursor);
  if (!Number.isInteger(limit) || limit < 1 || !Number.isInteger(from) || from < 0)
    return fail(reply, 400, 'bad limit or cursor');
  let sent = cursor === undefined ? shelf.firstPages.get(limit) : undefined;
  if (!sent) {
    const { rows } = shelf;
    const page: Plant[] = [];
    let i = from;
    for (; i < rows.length && page.length < limit; i++) if (rows[i]) page.push(rows[i]!);
    while (i < rows.length && !rows[i]) i++;
    sent = [JSON.stringify(page), i < rows.length ? `</plants?limit=${limit}&cursor=${i}>; rel="next"` : undefined];
    if (cursor === undefined) shelf.firstPages.set(limit, sent);
  }
  if (sent[1] !== undefined) void reply.header('link', sent[1]);
  return reply.type('application/json; charset=utf-8').send(sent[0]);
});

app.delete<{ Params: { id: string } }>('/plants/:id', { onRequest: authenticate }, (request, reply) => {
  const { id } = request.params;
  const { rows, at } = request.shelf;
  const i = at.get(id);
  if (i === undefined) return fail(reply, 404, `no plant with id ${id}`);
  at.delete(id);
  rows[i] = undefined;
  request.shelf.firstPages.clear();
  return reply.code(204).send();
});

await app.listen({ host: '127.0.0.1', port: Number(port) });
process.once('SIGTERM', () => void app.close().then(() => process.exit(0)));
