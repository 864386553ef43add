// The baseline: the smallest Fastify server with the service's three plant routes, the same bearer check (a sha256
// lookup), the same JSON bodies, status codes and Link cursors, but plants in memory and no logging.
//   node dist/bench/baseline.js PORT ROWS TOKENS_FILE   (a token per line: an owner each, with plants 1..ROWS)
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import Fastify, { type FastifyReply, type FastifyRequest } from 'fastify';
import { plantBody } from './scenarios.js';

type Plant = { name: string; tag?: string };
/** An owner's plants in insertion order (a deleted one leaves a hole), and where each id sits. */
type Shelf = { rows: (Plant | undefined)[]; at: Map<string, number> };

const MAX_LIMIT = 1000;
const hash = (token: string) => createHash('sha256').update(token).digest('base64');
const plant = ({ name, tag }: { name: string; tag?: string | undefined }): Plant =>
  tag === undefined ? { name } : { name, tag };
const fail = (reply: FastifyReply, error: number, message: string) => reply.code(error).send({ error, message });
const json = { type: 'object', properties: { name: { type: 'string' }, tag: { type: 'string' } }, required: ['name'] };

// In a file, not in the arguments, where anyone on the machine could read them.
const [port, rows, file] = process.argv.slice(2);
const shelves = new Map<string, Shelf>(); // by the hash of the owner's token
for (const token of readFileSync(file!, 'utf8').split('\n')) {
  const shelf: Shelf = { rows: [], at: new Map() };
  for (let id = 1; id <= Number(rows); id++) shelf.at.set(String(id), shelf.rows.push(plant(plantBody(id))) - 1);
  shelves.set(hash(token), shelf);
}

const app = Fastify({ logger: false });
const shelfOf = new WeakMap<FastifyRequest, Shelf>();
app.addHook('onRequest', (request, reply, done) => {
  const header = request.headers.authorization;
  const shelf = header?.startsWith('Bearer ') ? shelves.get(hash(header.slice(7))) : undefined;
  if (shelf === undefined) return void fail(reply, 401, 'invalid bearer token');
  shelfOf.set(request, shelf);
  done();
});

type Create = { Body: { id?: unknown; name?: unknown; tag?: unknown } };
app.post<Create>('/plants', { schema: { response: { 200: json } } }, async (request, reply) => {
  const { id, name, tag } = request.body ?? {};
  if (!Number.isSafeInteger(id) || typeof name !== 'string' || (tag !== undefined && typeof tag !== 'string'))
    return fail(reply, 400, 'body must be {id: integer, name: string, tag?: string}');
  const { rows, at } = shelfOf.get(request)!;
  const [key, created] = [String(id), plant({ name, tag })];
  const i = at.get(key);
  const existing = i === undefined ? undefined : rows[i];
  if (existing && (existing.name !== name || existing.tag !== tag)) return fail(reply, 409, `plant ${key} exists`);
  if (!existing) at.set(key, rows.push(created) - 1);
  return created;
});

type List = { Querystring: { limit?: string; cursor?: string } };
app.get<List>('/plants', { schema: { response: { 200: { type: 'array', items: json } } } }, async (request, reply) => {
  const { limit: rawLimit, cursor } = request.query;
  const limit = Math.min(rawLimit === undefined ? MAX_LIMIT : Number(rawLimit), MAX_LIMIT);
  const from = cursor === undefined ? 0 : Number(Buffer.from(cursor, 'base64url').toString());
  if (!Number.isInteger(limit) || limit < 1 || !Number.isInteger(from) || from < 0)
    return fail(reply, 400, 'bad limit or cursor');
  const { rows } = shelfOf.get(request)!;
  const page: Plant[] = [];
  let i = from;
  for (; i < rows.length && page.length < limit; i++) if (rows[i]) page.push(rows[i]!);
  while (i < rows.length && !rows[i]) i++;
  const next = i < rows.length && Buffer.from(String(i)).toString('base64url');
  if (next) void reply.header('link', `</plants?limit=${limit}&cursor=${next}>; rel="next"`);
  return page;
});

app.delete<{ Params: { id: string } }>('/plants/:id', async (request, reply) => {
  const { id } = request.params;
  const { rows, at } = shelfOf.get(request)!;
  const i = at.get(id);
  if (i === undefined) return fail(reply, 404, `no plant with id ${id}`);
  at.delete(id);
  rows[i] = undefined;
  return reply.code(204).send();
});

await app.listen({ host: '127.0.0.1', port: Number(port) });
process.once('SIGTERM', () => void app.close().then(() => process.exit(0)));
