// What each scenario stores before the servers start, what the load generator sends, and what the service is measured
// against: the in-memory baseline (baseline.ts), which gets the same owners, tokens and plants, or on PostgreSQL
// pgbench, running what the same requests need of the database.

/** Shares of each request kind (they need not add up to 1), and `?limit=` of list and page requests. */
export interface Workload {
  list?: number;
  create?: number;
  delete?: number; // of a plant created 1000 creates earlier in the same run (until there is one, a create)
  page?: number; // follows `Link: rel="next"` cursors, starting from cursors spread over the whole list
  limit: number;
}

export interface Scenario {
  name: string;
  title: string;
  owners: number;
  rowsPerOwner: number;
  workload: Workload;
  jwt?: boolean; // send JWTs (signed by jwt.ts, owner in `sub`) instead of the opaque tokens
  traced?: boolean; // the service with tracing on: every request a trace, exported to a loopback receiver (otlp-sink.ts)
  pgbench?: string; // on PostgreSQL (needs --pg), next to pgbench running this script per transaction
  target?: number; // on PostgreSQL, at the default settings: service / pgbench req/s (on SQLite: DURABLE_TARGET)
  vs?: { name: string; min?: number }; // also reported as a share of that scenario's service req/s, maybe with a target
}

/** In every scenario the service's p99 may be at most this many times its reference's in the same run. */
export const P99_RATIO = 2;
/** On SQLite, at the default settings, the service reaches this share of the durable reference's req/s. */
export const DURABLE_TARGET = 0.9;

export const ownerName = (i: number) => `owner${i}`;

/** One owner with 10k plants: the list, create and PostgreSQL scenarios. */
const ONE_OWNER = { owners: 1, rowsPerOwner: 10_000 };

export const SCENARIOS: readonly Scenario[] = [
  {
    name: 'list',
    title: 'GET /plants?limit=10, one owner, 10k plants',
    ...ONE_OWNER,
    workload: { list: 1, limit: 10 },
  },
  {
    name: 'jwt',
    title: 'as list, with a JWT (RS256) instead of the opaque token',
    ...ONE_OWNER,
    workload: { list: 1, limit: 10 },
    jwt: true,
    vs: { name: 'list' },
  },
  {
    name: 'traced',
    title: 'as list, with tracing on: every request a trace (OTLP/HTTP protobuf to a loopback receiver)',
    ...ONE_OWNER,
    workload: { list: 1, limit: 10 },
    traced: true,
    vs: { name: 'list' },
  },
  {
    name: 'create',
    title: 'POST /plants, a new id each time (durability full)',
    ...ONE_OWNER,
    workload: { create: 1, limit: 10 },
  },
  {
    name: 'traced-create',
    title: 'as create, with tracing on: a server span and the SQLite write span per request',
    ...ONE_OWNER,
    workload: { create: 1, limit: 10 },
    traced: true,
    vs: { name: 'create' },
  },
  {
    name: 'owners',
    title: '50 owners × 200 plants, random owner, 90% list limit=10 / 10% create',
    owners: 50,
    rowsPerOwner: 200,
    workload: { list: 0.9, create: 0.1, limit: 10 },
  },
  {
    name: 'many',
    title: '300 owners × 200 plants, random owner, 78% list limit=10 / 22% create',
    owners: 300,
    rowsPerOwner: 200,
    workload: { list: 0.78, create: 0.22, limit: 10 },
  },
  {
    name: 'list1m',
    title: 'GET /plants?limit=10, one owner, 1M plants: a page costs the same however long the list',
    owners: 1,
    rowsPerOwner: 1_000_000,
    workload: { list: 1, limit: 10 },
    vs: { name: 'list', min: 0.9 },
  },
  {
    name: 'paging',
    title: 'following next cursors (limit=100) from 32 points spread over 1M plants',
    owners: 1,
    rowsPerOwner: 1_000_000,
    workload: { page: 1, limit: 100 },
  },
  {
    name: 'churn',
    title: '50 owners × 200 plants, random owner, 70% list / 20% create / 10% delete',
    owners: 50,
    rowsPerOwner: 200,
    workload: { list: 0.7, create: 0.2, delete: 0.1, limit: 10 },
  },
  {
    name: 'pg-list',
    title: 'GET /plants?limit=10 (one owner, 10k plants) vs pgbench: the same 11 rows by (created_at, id)',
    ...ONE_OWNER,
    workload: { list: 1, limit: 10 },
    pgbench: `SELECT name, tag, created_at, id FROM plants WHERE owner = '${ownerName(0)}' ORDER BY created_at, id LIMIT 11;\n`,
    target: 0.8,
  },
  {
    name: 'pg-create',
    title: 'POST /plants (synchronous_commit=on) vs pgbench: one INSERT … ON CONFLICT DO NOTHING per transaction',
    ...ONE_OWNER,
    workload: { create: 1, limit: 10 },
    pgbench: `\\set id random(1, 4000000000000000000)
INSERT INTO plants (owner, id, name, tag) VALUES ('pgbench', :id, 'plant', 'fern') ON CONFLICT (owner, id) DO NOTHING;\n`,
    target: 0.8,
  },
];

/** The plant with this id, as both servers store it and as creates send it: every other one has a tag. */
export const plantBody = (id: number) =>
  id % 2 === 0 ? { id, name: `plant-${id}`, tag: 'fern' } : { id, name: `plant-${id}` };

/** Cumulative thresholds for one random number: [list, list+create] / total (above them, a delete). */
export function shares({ list = 0, create = 0, delete: del = 0 }: Workload): [number, number] {
  const total = list + create + del;
  return [list / total, list / total + create / total];
}
