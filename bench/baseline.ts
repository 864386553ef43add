// The baseline: the smallest Fastify server with the service's three plant
// routes, the same bearer check (a sha256 lookup), the same JSON bodies,
// status codes and Link cursors, but plants in memory and no logging.
//   node dist/bench/baseline.js SPEC.json PORT
// SPEC.json: {"owners": [{"owner", "token", "rows"}]}; plant ids 1..rows each.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import Fastify, { type FastifyReply, type FastifyRequest } from 'fastify';
import { plantBody } from './scenarios.js';

interface Plant {
  name: string;
  tag?: string;
}
/** Plants in insertion order (a deleted one leaves a hole) and where each id sits. */
interface Shelf {
  rows: (Plant | undefined)[];
  at: Map<string, number>;
}

const MAX_LIMIT = 1000;
const hash = (token: string) => createHash('sha256').update(token).digest('base64');
const fail = (reply: FastifyReply, status: number, message: string) =>
  reply.code(status).send({ error: status, message });

const PlantSchema = {
  type: 'object',
  properties: { name: { type: 'string' }, tag: { type: 'string' } },
  required: ['name'],
};

const spec = JSON.parse(readFileSync(process.argv[2]!, 'utf8')) as {
  owners: { owner: string; token: string; rows: number }[];
};
const owners = new Map<string, string>();
const shelves = new Map<string, Shelf>();
for (const { owner, token, rows } of spec.owners) {
  owners.set(hash(token), owner);
  const shelf: Shelf = { rows: [], at: new Map() };
  for (let id = 1; id <= rows; id++) {
    const { name, tag } = plantBody(id);
    shelf.at.set(String(id), shelf.rows.push(tag === undefined ? { name } : { name, tag }) - 1);
  }
  shelves.set(owner, shelf);
}

const app = Fastify({ logger: false });
const shelfOf = new WeakMap<FastifyRequest, Shelf>();
app.addHook('onRequest', (request, reply, done) => {
  const header = request.headers.authorization;
  const owner = header?.startsWith('Bearer ') ? owners.get(hash(header.slice(7))) : undefined;
  if (owner === undefined) return void fail(reply, 401, 'invalid bearer token');
  shelfOf.set(request, shelves.get(owner)!);
  done();
});

app.post<{ Body: { id?: unknown; name?: unknown; tag?: unknown } }>(
  '/plants',
  { schema: { response: { 200: PlantSchema } } },
  async (request, reply) => {
    const { id, name, tag } = request.body ?? {};
    if (!Number.isSafeInteger(id) || typeof name !== 'string' || (tag !== undefined && typeof tag !== 'string'))
      return fail(reply, 400, 'body must be {id: integer, name: string, tag?: string}');
    const shelf = shelfOf.get(request)!;
    const key = String(id);
    const at = shelf.at.get(key);
    const existing = at === undefined ? undefined : shelf.rows[at];
    if (existing && (existing.name !== name || existing.tag !== tag)) return fail(reply, 409, `plant ${key} exists`);
    const plant: Plant = tag === undefined ? { name } : { name, tag };
    if (!existing) shelf.at.set(key, shelf.rows.push(plant) - 1);
    return plant;
  },
);

app.get<{ Querystring: { limit?: string; cursor?: string } }>(
  '/plants',
  { schema: { response: { 200: { type: 'array', items: PlantSchema } } } },
  async (request, reply) => {
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
    if (i < rows.length)
      void reply.header(
        'link',
        `</plants?limit=${limit}&cursor=${Buffer.from(String(i)).toString('base64url')}>; rel="next"`,
      );
    return page;
  },
);

app.delete<{ Params: { id: string } }>('/plants/:id', async (request, reply) => {
  const { id } = request.params;
  const shelf = shelfOf.get(request)!;
  const at = shelf.at.get(id);
  if (at === undefined) return fail(reply, 404, `no plant with id ${id}`);
  shelf.at.delete(id);
  shelf.rows[at] = undefined;
  return reply.code(204).send();
});

await app.listen({ host: '127.0.0.1', port: Number(process.argv[3]) });
process.once('SIGTERM', () => void app.close().then(() => process.exit(0)));
