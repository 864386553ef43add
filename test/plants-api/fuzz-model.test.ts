// Model-based fuzzing over HTTP: random command sequences across three owners
// (creates with replays and conflicting ids, deletes, paged lists with random
// limits following Link, bad bodies, token revocations) run against a real
// server on a real socket, on every store, and are checked against an
// in-memory model. `npm test` runs a short seeded run; `npm run fuzz` a long
// one (10 000 commands per store, a random seed; PLANTS_FUZZ_COMMANDS and
// PLANTS_FUZZ_SEED override them, so a failure's seed replays it).
// A failure prints the seed and the shrunk command sequence.
import assert from 'node:assert/strict';
import { after, before, it } from '../helpers/requirements.js';
import type { FastifyInstance } from 'fastify';
import fc from 'fast-check';
import { buildApp } from '../../src/app/app.js';
import { issueToken } from '../../src/auth/tokens.js';
import type { Store } from '../../src/store/store.js';
import { describeEachStore } from '../helpers/stores.js';

const COMMANDS = Number(process.env.PLANTS_FUZZ_COMMANDS ?? 250);
const SEED =
  process.env.PLANTS_FUZZ_SEED === 'random'
    ? Math.floor(Math.random() * 2 ** 31)
    : Number(process.env.PLANTS_FUZZ_SEED ?? 20261123);
const PER_RUN = 40;
const OWNERS = 3;
const MAX = 2n ** 63n - 1n;
const MIN = -(2n ** 63n);
// Few ids, so that creates replay, conflict and meet deletes often; the int64 edges and 2^53 neighbours included.
const IDS = [0n, 1n, -1n, 42n, 2n ** 53n, 2n ** 53n + 1n, MAX, MIN];

interface Plant {
  id: bigint;
  name: string;
  tag: string | undefined;
}

interface Model {
  plants: Plant[][];
  revoked: boolean[];
}

interface Real {
  url: string;
  store: Store;
  /** This run's owners, so runs on one store do not see each other. */
  owners: string[];
  tokens: string[];
}

const show = (p: { name: string; tag: string | undefined }) =>
  p.tag === undefined ? { name: p.name } : { name: p.name, tag: p.tag };

async function send(real: Real, who: number, method: string, path: string, body?: string) {
  const headers: Record<string, string> = { authorization: `Bearer ${real.tokens[who]}` };
  if (body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(`${real.url}${path}`, { method, headers, ...(body !== undefined ? { body } : {}) });
  const text = await res.text();
  return { status: res.status, text, link: res.headers.get('link') };
}

function expectUnauthorized(res: { status: number; text: string }) {
  assert.equal(res.status, 401, res.text);
  assert.equal(JSON.parse(res.text).error, 401);
}

class Create implements fc.AsyncCommand<Model, Real> {
  constructor(
    readonly who: number,
    readonly id: bigint,
    readonly name: string,
    readonly tag: string | undefined,
  ) {}
  check = () => true;
  async run(m: Model, r: Real) {
    const body = `{"id":${this.id},"name":${JSON.stringify(this.name)}${this.tag === undefined ? '' : `,"tag":${JSON.stringify(this.tag)}`}}`;
    const res = await send(r, this.who, 'POST', '/plants', body);
    if (m.revoked[this.who]) return expectUnauthorized(res);
    const existing = m.plants[this.who]!.find((p) => p.id === this.id);
    if (existing && (existing.name !== this.name || existing.tag !== this.tag)) {
      assert.equal(res.status, 409, res.text);
      return;
    }
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(JSON.parse(res.text), show({ name: this.name, tag: this.tag }));
    if (!existing) m.plants[this.who]!.push({ id: this.id, name: this.name, tag: this.tag });
  }
  toString = () =>
    `create(owner ${this.who}, id ${this.id}, ${JSON.stringify(this.name)}, ${JSON.stringify(this.tag)})`;
}

class Delete implements fc.AsyncCommand<Model, Real> {
  constructor(
    readonly who: number,
    readonly id: bigint,
  ) {}
  check = () => true;
  async run(m: Model, r: Real) {
    const res = await send(r, this.who, 'DELETE', `/plants/${this.id}`);
    if (m.revoked[this.who]) return expectUnauthorized(res);
    const list = m.plants[this.who]!;
    const at = list.findIndex((p) => p.id === this.id);
    if (at === -1) {
      assert.equal(res.status, 404, res.text);
      return;
    }
    assert.equal(res.status, 204, res.text);
    assert.equal(res.text, '');
    list.splice(at, 1);
  }
  toString = () => `delete(owner ${this.who}, id ${this.id})`;
}

class List implements fc.AsyncCommand<Model, Real> {
  constructor(
    readonly who: number,
    readonly limit: number,
  ) {}
  check = () => true;
  async run(m: Model, r: Real) {
    const seen: unknown[] = [];
    let path: string | undefined = `/plants?limit=${this.limit}`;
    for (let pages = 0; path !== undefined; pages++) {
      assert.ok(pages <= IDS.length + 1, 'paging does not end');
      const res = await send(r, this.who, 'GET', path);
      if (m.revoked[this.who]) return expectUnauthorized(res);
      assert.equal(res.status, 200, res.text);
      const page = JSON.parse(res.text) as unknown[];
      assert.ok(page.length <= this.limit);
      seen.push(...page);
      path = res.link === null ? undefined : /^<([^>]+)>; rel="next"$/.exec(res.link)![1];
    }
    assert.deepEqual(seen, m.plants[this.who]!.map(show));
  }
  toString = () => `list(owner ${this.who}, limit ${this.limit})`;
}

const BAD_BODIES = [
  '',
  '{',
  '[]',
  'null',
  '{"id":1}',
  '{"name":"x"}',
  '{"id":1.5,"name":"x"}',
  '{"id":1e3,"name":"x"}',
  `{"id":${MAX + 1n},"name":"x"}`,
  `{"id":${MIN - 1n},"name":"x"}`,
  '{"id":1,"name":""}',
  '{"id":1,"name":null}',
  '{"id":1,"name":"x","tag":null}',
  '{"id":1,"name":"x","extra":true}',
  '{"id":1,"name":"x","id":2}',
  `{"id":1,"name":"${'x'.repeat(257)}"}`,
];

class BadBody implements fc.AsyncCommand<Model, Real> {
  constructor(
    readonly who: number,
    readonly body: string,
  ) {}
  check = () => true;
  async run(m: Model, r: Real) {
    const res = await send(r, this.who, 'POST', '/plants', this.body);
    if (m.revoked[this.who]) return expectUnauthorized(res);
    assert.equal(res.status, 400, `${this.body} -> ${res.status} ${res.text}`);
    const body = JSON.parse(res.text) as { error: number; message: string };
    assert.equal(body.error, 400);
    assert.ok(body.message.length > 0);
  }
  toString = () => `badBody(owner ${this.who}, ${JSON.stringify(this.body)})`;
}

class Revoke implements fc.AsyncCommand<Model, Real> {
  constructor(readonly who: number) {}
  check = (m: Readonly<Model>) => !m.revoked[this.who];
  async run(m: Model, r: Real) {
    const { hashToken } = await import('../../src/auth/tokens.js');
    assert.equal(await r.store.tokens.revoke(hashToken(r.tokens[this.who]!), new Date()), true);
    m.revoked[this.who] = true;
  }
  toString = () => `revoke(owner ${this.who})`;
}

class Reissue implements fc.AsyncCommand<Model, Real> {
  constructor(readonly who: number) {}
  check = (m: Readonly<Model>) => m.revoked[this.who]!;
  async run(m: Model, r: Real) {
    r.tokens[this.who] = (await issueToken(r.store.tokens, { owner: r.owners[this.who]! })).token;
    m.revoked[this.who] = false;
  }
  toString = () => `reissue(owner ${this.who})`;
}

const who = fc.integer({ min: 0, max: OWNERS - 1 });
const commands = fc.commands(
  [
    fc
      .tuple(
        who,
        fc.constantFrom(...IDS),
        fc.constantFrom('fern', 'moss', '🌵'),
        fc.constantFrom(undefined, '', 'green'),
      )
      .map(([w, id, name, tag]) => new Create(w, id, name, tag)),
    fc.tuple(who, fc.constantFrom(...IDS)).map(([w, id]) => new Delete(w, id)),
    fc.tuple(who, fc.integer({ min: 1, max: 4 })).map(([w, limit]) => new List(w, limit)),
    fc.tuple(who, fc.constantFrom(...BAD_BODIES)).map(([w, body]) => new BadBody(w, body)),
    who.map((w) => new Revoke(w)),
    who.map((w) => new Reissue(w)),
  ],
  { maxCommands: PER_RUN },
);

describeEachStore('model-based fuzzing over HTTP', (fx) => {
  let store: Store;
  let app: FastifyInstance;
  let url: string;
  let run = 0;

  before(async () => {
    // No token cache: a revocation must be seen by the very next request.
    const config = fx.config({ tokenCacheMs: 0 });
    store = await fx.open({ tokenCacheMs: 0 });
    app = await buildApp(config, { store });
    url = await app.listen({ host: '127.0.0.1', port: 0 });
  });
  after(() => app?.close());

  it(`agrees with the model over ${COMMANDS} commands (seed ${SEED})`, async (t) => {
    let executed = 0;
    for (let round = 0; executed < COMMANDS; round++) {
      await fc.assert(
        fc.asyncProperty(commands, async (cmds) => {
          run++;
          const owners = Array.from({ length: OWNERS }, (_, i) => `fuzz-${run}-${i}`);
          const tokens = await Promise.all(
            owners.map(async (owner) => (await issueToken(store.tokens, { owner })).token),
          );
          const model: Model = { plants: owners.map(() => []), revoked: owners.map(() => false) };
          executed += [...cmds].length;
          await fc.asyncModelRun(() => ({ model, real: { url, store, owners, tokens } }), cmds);
          // Whatever happened, each owner ends with exactly the model's plants.
          for (let i = 0; i < OWNERS; i++) {
            if (model.revoked[i]) await new Reissue(i).run(model, { url, store, owners, tokens });
            await new List(i, 3).run(model, { url, store, owners, tokens });
          }
        }),
        { seed: SEED + round, numRuns: 25, verbose: 1, includeErrorInReport: true },
      );
    }
    t.diagnostic(`${executed} commands`);
  });
});
