// What each scenario stores before the servers start and what the load
// generator sends. Both servers get the same owners, tokens and plants.

/** Shares of each request kind (they need not add up to 1). */
export interface Workload {
  list?: number;
  create?: number;
  /** Deletes a plant created 1000 creates earlier in the same run (until there is one, a create). */
  delete?: number;
  /** Follows `Link: rel="next"` cursors, starting from cursors spread over the whole list. */
  page?: number;
  /** `?limit=` of list and page requests. */
  limit: number;
}

export interface Scenario {
  name: string;
  title: string;
  owners: number;
  rowsPerOwner: number;
  workload: Workload;
  /** Send JWTs (signed by bench/jwt.ts, owner in `sub`) instead of the opaque tokens. */
  jwt?: boolean;
  /** Targets at the default settings: service / baseline req/s, and service p99. */
  target?: { ratio: number; p99Ms?: number };
}

export const SCENARIOS: readonly Scenario[] = [
  {
    name: 'list',
    title: 'GET /plants?limit=10, one owner, 10k plants',
    owners: 1,
    rowsPerOwner: 10_000,
    workload: { list: 1, limit: 10 },
    target: { ratio: 0.8 },
  },
  {
    name: 'jwt',
    title: 'as list, with a JWT (RS256) instead of the opaque token',
    owners: 1,
    rowsPerOwner: 10_000,
    workload: { list: 1, limit: 10 },
    jwt: true,
  },
  {
    name: 'create',
    title: 'POST /plants, a new id each time (durability full)',
    owners: 1,
    rowsPerOwner: 10_000,
    workload: { create: 1, limit: 10 },
    target: { ratio: 0.6 },
  },
  {
    name: 'owners',
    title: '50 owners × 200 plants, random owner, 90% list limit=10 / 10% create',
    owners: 50,
    rowsPerOwner: 200,
    workload: { list: 0.9, create: 0.1, limit: 10 },
    target: { ratio: 0.6, p99Ms: 5 },
  },
  {
    name: 'list1m',
    title: 'GET /plants?limit=10, one owner, 1M plants',
    owners: 1,
    rowsPerOwner: 1_000_000,
    workload: { list: 1, limit: 10 },
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
];

/** list1m must keep this share of list's service req/s: a page costs the same however long the list. */
export const FLATNESS = { of: 'list1m', vs: 'list', min: 0.9 } as const;

/** jwt's service req/s as a share of list's: what a JWT costs against an opaque token. No target. */
export const JWT_VS_LIST = { of: 'jwt', vs: 'list' } as const;

export const ownerName = (i: number) => `owner${i}`;

/** The plant with this id, as both servers store it and as creates send it: every other one has a tag. */
export const plantBody = (id: number) =>
  id % 2 === 0 ? { id, name: `plant-${id}`, tag: 'fern' } : { id, name: `plant-${id}` };

export const readOnly = (w: Workload) => !w.create && !w.delete;
