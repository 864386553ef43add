// The baseline: the smallest Fastify server that honours the same contract as
// the service for the three benchmarked routes (bearer check through a Map of
// sha256 hashes, the same JSON bodies and status codes) but keeps plants in a
// Map. Measuring it next to the service shows what the service's storage,
// validation and hooks cost on top of Fastify itself. Run as its own process:
//   BENCH_TOKEN=... node dist/bench/baseline.js --port 0 --preload 10000
import { createHash } from 'node:crypto';
import { parseArgs } from 'node:util';
import Fastify, { type FastifyReply, type FastifyRequest } from 'fastify';
import { BENCH_OWNER, plantsUpTo } from './plant-data.js';

interface StoredPlant {
  name: string;
  tag?: string;
}

const LIST_DEFAULT_LIMIT = 1000;
const LIST_MAX_LIMIT = 1000;

const hash = (token: string) => createHash('sha256').update(token).digest('base64');

const PlantSchema = {
  type: 'object',
  properties: { name: { type: 'string' }, tag: { type: 'string' } },
  required: ['name'],
} as const;
const ErrorSchema = {
  type: 'object',
  properties: { error: { type: 'integer' }, message: { type: 'string' } },
  required: ['error', 'message'],
} as const;

function fail(reply: FastifyReply, status: number, message: string): FastifyReply {
  return reply.code(status).send({ error: status, message });
}

export function buildBaseline(tokens: ReadonlyMap<string, string>, plants: Map<string, Map<string, StoredPlant>>) {
  const app = Fastify({ logger: false });
  const ownerOf = new WeakMap<FastifyRequest, string>();
  const plantsOf = (owner: string) => {
    let m = plants.get(owner);
    if (!m) plants.set(owner, (m = new Map()));
    return m;
  };

  app.addHook('onRequest', async (request, reply) => {
    const header = request.headers.authorization;
    const owner = header?.startsWith('Bearer ') ? tokens.get(hash(header.slice(7))) : undefined;
    if (owner === undefined) return fail(reply, 401, 'invalid bearer token');
    ownerOf.set(request, owner);
  });

  const errors = { 400: ErrorSchema, 401: ErrorSchema, 404: ErrorSchema, 409: ErrorSchema };

  app.post<{ Body: { id?: unknown; name?: unknown; tag?: unknown } }>(
    '/plants',
    { schema: { response: { 200: PlantSchema, ...errors } } },
    async (request, reply) => {
      const { id, name, tag } = request.body ?? {};
      if (
        !Number.isSafeInteger(id) ||
        typeof name !== 'string' ||
        name === '' ||
        (tag !== undefined && typeof tag !== 'string')
      ) {
        return fail(reply, 400, 'body must be {id: integer, name: string, tag?: string}');
      }
      const mine = plantsOf(ownerOf.get(request)!);
      const key = String(id);
      const existing = mine.get(key);
      if (existing && (existing.name !== name || existing.tag !== tag)) return fail(reply, 409, `plant ${key} exists`);
      const plant: StoredPlant = tag === undefined ? { name } : { name, tag };
      if (!existing) mine.set(key, plant);
      return plant;
    },
  );

  app.get<{ Querystring: { limit?: string } }>(
    '/plants',
    { schema: { response: { 200: { type: 'array', items: PlantSchema }, ...errors } } },
    async (request, reply) => {
      const raw = request.query.limit;
      const limit = raw === undefined ? LIST_DEFAULT_LIMIT : Number(raw);
      if (!Number.isInteger(limit) || limit < 1) return fail(reply, 400, 'limit must be a positive integer');
      const page: StoredPlant[] = [];
      const max = Math.min(limit, LIST_MAX_LIMIT);
      for (const p of plantsOf(ownerOf.get(request)!).values()) {
        if (page.length === max) break;
        page.push(p);
      }
      return page;
    },
  );

  app.delete<{ Params: { id: string } }>('/plants/:id', { schema: { response: errors } }, async (request, reply) => {
    const { id } = request.params;
    if (!plantsOf(ownerOf.get(request)!).delete(id)) return fail(reply, 404, `no plant with id ${id}`);
    return reply.code(204).send();
  });

  return app;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      host: { type: 'string', default: '127.0.0.1' },
      port: { type: 'string', default: '0' },
      preload: { type: 'string', default: '0' },
    },
  });
  const token = process.env.BENCH_TOKEN;
  if (!token) throw new Error('BENCH_TOKEN must hold the bearer token to accept');
  const owner = process.env.BENCH_OWNER ?? BENCH_OWNER;
  const mine = new Map<string, StoredPlant>();
  for (const p of plantsUpTo(Number(values.preload)))
    mine.set(String(p.id), p.tag === undefined ? { name: p.name } : { name: p.name, tag: p.tag });
  const app = buildBaseline(new Map([[hash(token), owner]]), new Map([[owner, mine]]));
  const address = await app.listen({ host: values.host, port: Number(values.port) });
  // The same line (and shape) the service logs, so both are started the same way.
  process.stdout.write(`${JSON.stringify({ level: 30, time: Date.now(), msg: `Server listening at ${address}` })}\n`);
  const stop = () => void app.close().then(() => process.exit(0));
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}

await main();
