// GET /openapi.json: a valid OpenAPI 3.1 document that describes what the
// service really answers. Real responses are validated against the schema the
// document declares for their status, and every status seen must be documented,
// explicitly or by the operation's `default` response.
import assert from 'node:assert/strict';
import type { AddressInfo, Socket } from 'node:net';
import { after, before, describe, it } from '../helpers/requirements.js';
import { Validator } from '@seriousme/openapi-schema-validator';
import addFormats from 'ajv-formats';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { buildApp } from '../../src/app/app.js';
import { issueToken } from '../../src/auth/tokens.js';
import { useApp } from '../helpers/app.js';
import { createRaw, newOwner } from '../helpers/plants-http.js';
import { eventually } from '../helpers/eventually.js';
import { exchange, trickle } from '../helpers/raw-socket.js';
import { describeHttpLayer } from '../helpers/stores.js';

const DOC_ID = 'https://plant-store.test/openapi.json';

/** Statuses the document may list that a healthy service cannot be made to answer on demand. */
const NOT_PRODUCIBLE = new Set(['500', '503']);

interface Operation {
  operationId?: string;
  summary?: string;
  description?: string;
  security?: Array<Record<string, string[]>>;
  parameters?: Array<{ name: string; in: string; required?: boolean; schema: Record<string, unknown> }>;
  requestBody?: { content: Record<string, { schema: unknown }> };
  responses: Record<
    string,
    { description: string; content?: Record<string, { schema: unknown; example?: unknown; examples?: unknown }> }
  >;
}
interface OpenApiDoc {
  openapi: string;
  info: { version: string; title: string };
  security?: Array<Record<string, unknown>>;
  servers?: Array<{ url: string }>;
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, unknown>; securitySchemes: Record<string, Record<string, unknown>> };
}

const PLANT_OPERATIONS = [
  ['/plants', 'post'],
  ['/plants', 'get'],
  ['/plants/{id}', 'get'],
  ['/plants/{id}', 'delete'],
] as const;

type IdSchema = { oneOf: Array<Record<string, unknown>>; description?: string };

/** An int64 id: a JSON integer, or a string of decimal digits without leading zeros. */
function assertIdSchema(schema: IdSchema): void {
  assert.equal(schema.oneOf.length, 2, JSON.stringify(schema));
  assert.equal(schema.oneOf[0]!.type, 'integer');
  assert.equal(schema.oneOf[0]!.format, 'int64');
  assert.equal(schema.oneOf[1]!.type, 'string');
  assert.equal(schema.oneOf[1]!.pattern, '^-?(0|[1-9][0-9]{0,19})$');
}

/** A JSON pointer into the document, as a URI fragment. */
function pointer(...parts: string[]): string {
  return '#/' + parts.map((p) => encodeURIComponent(p.replace(/~/g, '~0').replace(/\//g, '~1'))).join('/');
}

/**
 * The response the document declares for an operation and status, and its key
 * in `responses`: the status's own entry, or else the operation's `default`.
 */
function declared(
  op: Operation,
  status: string,
): { key: string; response: Operation['responses'][string] } | undefined {
  if (op.responses[status]) return { key: status, response: op.responses[status] };
  if (op.responses.default) return { key: 'default', response: op.responses.default };
  return undefined;
}

/** Ajv 2020 with the whole document (and so components.schemas) loaded, and the OpenAPI integer formats. */
function documentValidator(doc: OpenApiDoc) {
  const ajv = addFormats.default(new Ajv2020({ strict: false, allErrors: true }));
  ajv.addFormat('int32', {
    type: 'number',
    validate: (n: number) => Number.isInteger(n) && n >= -(2 ** 31) && n < 2 ** 31,
  });
  ajv.addFormat('int64', { type: 'number', validate: (n: number) => Number.isInteger(n) });
  // /readyz reports when the JWT keys were fetched; an unknown format would be a warning in the test output.
  ajv.addFormat('date-time', { type: 'string', validate: (s: string) => !Number.isNaN(Date.parse(s)) });
  ajv.addSchema(structuredClone(doc) as object, DOC_ID);
  const cache = new Map<string, ValidateFunction>();
  return (ref: string): ValidateFunction => {
    let fn = cache.get(ref);
    if (!fn) {
      fn = ajv.compile({ $ref: `${DOC_ID}${ref}` });
      cache.set(ref, fn);
    }
    return fn;
  };
}

describeHttpLayer('OpenAPI document', (fx) => {
  const h = useApp(fx);
  let doc: OpenApiDoc;
  let schemaAt: (ref: string) => ValidateFunction;

  before(async () => {
    const res = await h.request({ method: 'GET', url: '/openapi.json' });
    assert.equal(res.statusCode, 200, res.body);
    assert.match(String(res.headers['content-type']), /^application\/json\b/);
    doc = JSON.parse(res.body) as OpenApiDoc;
    schemaAt = documentValidator(doc);
  });

  describe('the document', () => {
    it('is a valid OpenAPI 3.1 document', async () => {
      assert.match(doc.openapi, /^3\.1\.\d+$/);
      const validator = new Validator();
      const result = await validator.validate(structuredClone(doc) as unknown as Record<string, unknown>);
      assert.equal(result.valid, true, `OpenAPI schema errors: ${JSON.stringify(result.errors, null, 1)}`);
      assert.equal(validator.version, '3.1');
    });

    it('carries info.version 1.0.0', () => {
      assert.equal(doc.info.version, '1.0.0');
      assert.equal(typeof doc.info.title, 'string');
    });

    it('declares bearerAuth as HTTP bearer and requires it on every plant operation', () => {
      const scheme = doc.components.securitySchemes.bearerAuth;
      assert.ok(scheme, 'components.securitySchemes.bearerAuth');
      assert.equal(scheme.type, 'http');
      assert.equal(String(scheme.scheme).toLowerCase(), 'bearer');
      for (const [path, method] of PLANT_OPERATIONS) {
        const op = doc.paths[path]?.[method];
        assert.ok(op, `${method.toUpperCase()} ${path} is documented`);
        const security = op.security ?? doc.security;
        assert.ok(Array.isArray(security) && security.length > 0, `${method} ${path} has security`);
        // Every alternative needs bearerAuth: there is no way around the token.
        for (const requirement of security) {
          assert.ok('bearerAuth' in requirement, `${method} ${path}: ${JSON.stringify(requirement)}`);
        }
      }
    });

    it('leaves the health endpoints open', () => {
      for (const path of ['/healthz', '/readyz']) {
        const op = doc.paths[path]?.get;
        assert.ok(op, `GET ${path} is documented`);
        const security = op.security ?? doc.security ?? [];
        assert.ok(
          security.length === 0 || security.some((r) => Object.keys(r).length === 0),
          `GET ${path} needs no token`,
        );
      }
    });

    it('yields response schemas that really constrain bodies (the checks below are not vacuous)', () => {
      const plant = schemaAt(
        pointer('paths', '/plants', 'post', 'responses', '200', 'content', 'application/json', 'schema'),
      );
      assert.equal(plant({ name: 'x', tag: 'y' }), true);
      // A batch is answered with the array of its plants.
      assert.equal(plant([{ name: 'x' }, { name: 'y', tag: '' }]), true);
      for (const bad of [{}, { name: 5 }, { name: 'x', tag: null }, [{ name: 'x' }, { tag: 'y' }], [[{ name: 'x' }]]]) {
        assert.equal(plant(bad), false, JSON.stringify(bad));
      }
      const list = schemaAt(
        pointer('paths', '/plants', 'get', 'responses', '200', 'content', 'application/json', 'schema'),
      );
      assert.equal(list([{ name: 'x' }, { name: 'y', tag: '' }]), true);
      assert.equal(list([{ name: 'x' }, { tag: 'y' }]), false);
      const error = schemaAt(
        pointer('paths', '/plants/{id}', 'delete', 'responses', '404', 'content', 'application/json', 'schema'),
      );
      assert.equal(error({ error: 404, message: 'no plant' }), true);
      for (const bad of [
        { error: 404 },
        { message: 'm' },
        { error: '404', message: 'm' },
        { error: 4.5, message: 'm' },
        { error: 2 ** 31, message: 'm' },
      ]) {
        assert.equal(error(bad), false, JSON.stringify(bad));
      }
    });

    it('describes the NewPlant body as a component: allOf Plant and an id that may be an integer or a decimal string', () => {
      const body = doc.paths['/plants']!.post!.requestBody!.content['application/json']!.schema as Record<
        string,
        unknown
      >;
      // One NewPlant, or a batch: an array of them.
      const [one, batch] = body.oneOf as [Record<string, unknown>, Record<string, unknown>];
      assert.deepEqual(one, { $ref: '#/components/schemas/NewPlant' });
      assert.equal(batch.type, 'array');
      assert.deepEqual(batch.items, { $ref: '#/components/schemas/NewPlant' });
      assert.deepEqual([batch.minItems, batch.maxItems], [1, 1000]);
      const newPlant = doc.components.schemas.NewPlant as {
        allOf: Array<Record<string, unknown>>;
        unevaluatedProperties: boolean;
      };
      assert.equal(newPlant.unevaluatedProperties, false);
      assert.deepEqual(newPlant.allOf[0], { $ref: '#/components/schemas/Plant' });
      const idPart = newPlant.allOf[1] as { required: string[]; properties: Record<string, IdSchema> };
      assert.deepEqual(idPart.required, ['id']);
      assert.deepEqual(Object.keys(idPart.properties), ['id']);
      assertIdSchema(idPart.properties.id!);
      assert.match(String(idPart.properties.id!.description), /string/);
      const plant = doc.components.schemas.Plant as {
        required: string[];
        properties: Record<string, { type: string }>;
      };
      assert.deepEqual(plant.required, ['name']);
      assert.equal(plant.properties.name!.type, 'string');
      assert.equal(plant.properties.tag!.type, 'string');
    });

    it('describes the limit and cursor query parameters and the int64 path id', () => {
      const params = doc.paths['/plants']!.get!.parameters ?? [];
      const limit = params.find((p) => p.name === 'limit');
      assert.ok(limit && limit.in === 'query' && !limit.required);
      assert.equal(limit.schema.type, 'integer');
      assert.equal(limit.schema.minimum, 1);
      assert.ok(params.some((p) => p.name === 'cursor' && p.in === 'query' && !p.required));
      const id = doc.paths['/plants/{id}']!.delete!.parameters?.find((p) => p.name === 'id');
      assert.ok(id && id.in === 'path' && id.required);
      assertIdSchema(id.schema as IdSchema);
    });

    it('names the server, describes every operation and says which need no token', () => {
      assert.deepEqual(
        doc.servers?.map((s) => s.url),
        ['/'],
      );
      for (const [path, ops] of Object.entries(doc.paths)) {
        for (const [method, op] of Object.entries(ops)) {
          assert.ok(op.summary && op.description, `${method} ${path} has a summary and a description`);
          assert.ok(Array.isArray(op.security), `${method} ${path} states its security`);
        }
      }
      assert.deepEqual(doc.paths['/healthz']!.get!.security, []);
      assert.deepEqual(doc.paths['/readyz']!.get!.security, []);
      assert.deepEqual(Object.keys(doc.paths).sort(), [
        '/healthz',
        '/plants',
        '/plants/events',
        '/plants/{id}',
        '/readyz',
      ]);
    });

    it('is served with Cache-Control: no-store, like every response', async () => {
      const res = await h.request({ method: 'GET', url: '/openapi.json' });
      assert.equal(res.headers['cache-control'], 'no-store');
    });
  });

  describe('real responses match the document', () => {
    const seen = new Map<string, Set<string>>(); // "METHOD path" → statuses answered
    const messages = new Map<string, Set<string>>(); // "METHOD path status" → error messages answered

    /** Validates a real response against the document's entry for its operation and status. */
    function conforms(path: string, method: string, res: LightMyRequestResponse): void {
      const op = doc.paths[path]?.[method.toLowerCase()];
      assert.ok(op, `${method} ${path} is not in the document`);
      const status = String(res.statusCode);
      const key = `${method} ${path}`;
      seen.set(key, (seen.get(key) ?? new Set()).add(status));
      const entry = declared(op, status);
      assert.ok(
        entry,
        `${key} answered ${status}, which the document does not list (${Object.keys(op.responses).join(', ')})`,
      );
      const content = entry.response.content?.['application/json'];
      if (!content) {
        assert.equal(res.body, '', `${key} ${status} is documented without a body`);
        return;
      }
      assert.match(String(res.headers['content-type']), /^application\/json\b/, `${key} ${status} content type`);
      const validate = schemaAt(
        pointer('paths', path, method.toLowerCase(), 'responses', entry.key, 'content', 'application/json', 'schema'),
      );
      const body = JSON.parse(res.body) as unknown;
      if (res.statusCode >= 400) {
        const messageKey = `${key} ${status}`;
        messages.set(messageKey, (messages.get(messageKey) ?? new Set()).add((body as { message: string }).message));
      }
      assert.ok(
        validate(body),
        `${key} ${status} body ${res.body} breaks its schema: ${JSON.stringify(validate.errors)}`,
      );
      // Plant is open in the document (NewPlant extends it), but a plant is only ever sent as name and tag.
      if (path.startsWith('/plants') && status === '200') {
        for (const plant of [body].flat() as object[]) {
          assert.deepEqual(
            Object.keys(plant).filter((k) => k !== 'name' && k !== 'tag'),
            [],
            `${key}: ${res.body}`,
          );
        }
      }
    }

    const auth = { read: '', write: '', both: '', owner: '' };
    before(async () => {
      auth.owner = newOwner('doc');
      auth.both = await h.token(auth.owner);
      auth.read = await h.token(auth.owner, { scopes: ['plants:read'] });
      auth.write = await h.token(auth.owner, { scopes: ['plants:write'] });
    });

    it('POST /plants: 200, 400, 401, 403, 409, 413, 415', async () => {
      const post = async (token: string | undefined, raw: string, headers: Record<string, string> = {}) => {
        const res = await createRaw(h, token, raw, headers);
        conforms('/plants', 'POST', res);
        return res.statusCode;
      };
      assert.equal(await post(auth.both, '{"id":1,"name":"Fern"}'), 200);
      assert.equal(await post(auth.both, '{"id":2,"name":"Palm","tag":"tree"}'), 200);
      assert.equal(await post(auth.both, '{"id":9223372036854775807,"name":"Max"}'), 200);
      assert.equal(await post(auth.both, '{"id":1,"name":"Fern"}'), 200);
      assert.equal(await post(auth.both, '{"id":1,"name":"Other"}'), 409);
      assert.equal(await post(auth.both, '{"id":"1","name":"Fern"}'), 200);
      assert.equal(await post(auth.both, '{"id":"1.5","name":"Fern"}'), 400);
      assert.equal(await post(auth.both, '{"id":'), 400);
      assert.equal(await post(auth.both, '{"id":3,"name":"x","extra":1}'), 400);
      assert.equal(await post(auth.both, '{"id":3,"name":""}'), 400);
      assert.equal(await post(undefined, '{"id":3,"name":"x"}'), 401);
      assert.equal(await post('plnt_' + 'A'.repeat(43), '{"id":3,"name":"x"}'), 401);
      assert.equal(await post(auth.read, '{"id":3,"name":"x"}'), 403);
      assert.equal(await post(auth.both, `{"id":3,"name":"${'x'.repeat(1024 * 1024)}"}`), 413);
      assert.equal(await post(auth.both, '{"id":3,"name":"x"}', { 'content-type': 'text/plain' }), 415);
    });

    it('GET /plants: 200, 400, 401, 403', async () => {
      const get = async (token: string | undefined, url: string) => {
        const res = await h.request({ method: 'GET', url, token });
        conforms('/plants', 'GET', res);
        return res;
      };
      const full = await get(auth.both, '/plants');
      assert.equal(full.statusCode, 200);
      assert.deepEqual(JSON.parse(full.body), [{ name: 'Fern' }, { name: 'Palm', tag: 'tree' }, { name: 'Max' }]);
      const first = await get(auth.read, '/plants?limit=1');
      assert.equal(first.statusCode, 200);
      const next = /^<([^>]+)>; rel="next"$/.exec(String(first.headers.link))?.[1];
      assert.ok(next, 'a Link to the next page');
      assert.equal((await get(auth.read, next)).statusCode, 200);
      assert.equal((await get(auth.both, '/plants?limit=0')).statusCode, 400);
      assert.equal((await get(auth.both, '/plants?cursor=nope')).statusCode, 400);
      assert.equal((await get(auth.both, '/plants?page=2')).statusCode, 400);
      assert.equal((await get(auth.both, '/plants?tag=')).statusCode, 400);
      assert.equal((await get(undefined, '/plants')).statusCode, 401);
      assert.equal((await get(auth.write, '/plants')).statusCode, 403);
      const byTag = await get(auth.read, '/plants?tag=tree&limit=1');
      assert.deepEqual(JSON.parse(byTag.body), [{ name: 'Palm', tag: 'tree' }]);
      const etag = String(byTag.headers.etag);
      const unchanged = await h.request({
        method: 'GET',
        url: '/plants?tag=tree&limit=1',
        token: auth.read,
        headers: { 'if-none-match': etag },
      });
      conforms('/plants', 'GET', unchanged);
      assert.equal(unchanged.statusCode, 304);
    });

    it('GET /plants/{id}: 200, 304, 400, 401, 403, 404, 414', async () => {
      const get = async (token: string | undefined, id: string, headers: Record<string, string> = {}) => {
        const res = await h.request({ method: 'GET', url: `/plants/${id}`, token, headers });
        conforms('/plants/{id}', 'GET', res);
        return res;
      };
      const palm = await get(auth.read, '2');
      assert.equal(palm.statusCode, 200);
      assert.deepEqual(JSON.parse(palm.body), { name: 'Palm', tag: 'tree' });
      assert.equal((await get(auth.read, '2', { 'if-none-match': String(palm.headers.etag) })).statusCode, 304);
      assert.equal((await get(auth.both, '9007199254740993')).statusCode, 404);
      assert.equal((await get(auth.both, 'fern')).statusCode, 400);
      assert.equal((await get(auth.both, '1'.repeat(201))).statusCode, 414);
      assert.equal((await get(undefined, '2')).statusCode, 401);
      assert.equal((await get(auth.write, '2')).statusCode, 403);
    });

    it('GET /plants/events: 200 (text/event-stream), 400, 401, 403, 406, 429', async () => {
      const key = 'GET /plants/events';
      const documented = doc.paths['/plants/events']!.get!.responses['200']!;
      assert.ok(documented.content?.['text/event-stream'], 'the stream is documented as text/event-stream');
      await h.app.listen({ host: '127.0.0.1', port: 0 });
      const { port } = h.app.server.address() as { port: number };
      const streams: AbortController[] = [];
      try {
        // The owner's cap of open streams (10 by default), then one more.
        for (let i = 0; i < 10; i++) {
          const controller = new AbortController();
          streams.push(controller);
          const res = await fetch(`http://127.0.0.1:${port}/plants/events`, {
            headers: { authorization: `Bearer ${auth.read}` },
            signal: controller.signal,
          });
          assert.equal(res.status, 200);
          assert.match(String(res.headers.get('content-type')), /^text\/event-stream\b/);
          seen.set(key, (seen.get(key) ?? new Set()).add('200'));
        }
        const get = async (token: string | undefined, headers: Record<string, string> = {}) => {
          const res = await h.request({ method: 'GET', url: '/plants/events', token, headers });
          conforms('/plants/events', 'GET', res);
          return res.statusCode;
        };
        assert.equal(await get(auth.read), 429);
        assert.equal(await get(auth.read, { 'last-event-id': 'x' }), 400);
        assert.equal(await get(auth.read, { accept: 'application/json' }), 406);
        // Its own entry, not only the `default` every operation has.
        assert.ok(doc.paths['/plants/events']!.get!.responses['406'], '406 is declared');
        assert.equal(await get(undefined), 401);
        assert.equal(await get(auth.write), 403);
      } finally {
        for (const c of streams) c.abort();
      }
    });

    it('DELETE /plants/{id}: 204, 400, 401, 403, 404, 414', async () => {
      const del = async (token: string | undefined, id: string) => {
        const res = await h.request({ method: 'DELETE', url: `/plants/${id}`, token });
        conforms('/plants/{id}', 'DELETE', res);
        return res.statusCode;
      };
      assert.equal(await del(auth.write, '2'), 204);
      assert.equal(await del(auth.write, '2'), 404);
      assert.equal(await del(auth.both, '9223372036854775807'), 204);
      assert.equal(await del(auth.both, '9223372036854775808'), 400);
      assert.equal(await del(auth.both, 'fern'), 400);
      // The router refuses a path segment of more than 200 characters before any lookup.
      assert.equal(await del(auth.both, '1'.repeat(201)), 414);
      assert.equal(await del(undefined, '1'), 401);
      assert.equal(await del(auth.read, '1'), 403);
    });

    it('GET /healthz and GET /readyz: 200', async () => {
      for (const path of ['/healthz', '/readyz']) {
        const res = await h.request({ method: 'GET', url: path });
        assert.equal(res.statusCode, 200);
        conforms(path, 'GET', res);
      }
    });

    it('with the store gone, every answer is still a documented one', async () => {
      const store = await fx.open();
      const app = await buildApp(fx.config(), { store });
      try {
        await app.ready();
        const { token } = await issueToken(store.tokens, { owner: newOwner('gone') });
        const authorization = `Bearer ${token}`;
        assert.equal((await app.inject({ method: 'GET', url: '/plants', headers: { authorization } })).statusCode, 200);
        await store.close();
        const requests = [
          ['/readyz', 'GET', { method: 'GET', url: '/readyz' }],
          ['/plants', 'GET', { method: 'GET', url: '/plants', headers: { authorization } }],
          [
            '/plants',
            'POST',
            {
              method: 'POST',
              url: '/plants',
              headers: { authorization, 'content-type': 'application/json' },
              payload: '{"id":1,"name":"x"}',
            },
          ],
          ['/plants/{id}', 'DELETE', { method: 'DELETE', url: '/plants/1', headers: { authorization } }],
        ] as const;
        for (const [path, method, opts] of requests) {
          const res = await app.inject(opts);
          assert.equal(res.statusCode, 503, `${method} ${path} with the store closed answered ${res.statusCode}`);
          conforms(path, method, res);
        }
      } finally {
        await app.close();
      }
    });

    it('every documented status of every plant operation was answered above', () => {
      for (const [path, ops] of Object.entries(doc.paths)) {
        for (const [method, op] of Object.entries(ops)) {
          const key = `${method.toUpperCase()} ${path}`;
          const answered = seen.get(key) ?? new Set<string>();
          // `default` is checked status by status in the suite below.
          const missing = Object.keys(op.responses).filter(
            (s) => s !== 'default' && !answered.has(s) && !NOT_PRODUCIBLE.has(s),
          );
          assert.deepEqual(missing, [], `${key}: documented but never produced`);
        }
      }
      assert.ok(seen.size >= 5, `operations exercised: ${[...seen.keys()].join(', ')}`);
    });

    it('every error example shows its own status and a message the server really sends', () => {
      let checked = 0;
      for (const [path, ops] of Object.entries(doc.paths)) {
        for (const [method, op] of Object.entries(ops)) {
          const key = `${method.toUpperCase()} ${path}`;
          for (const [status, response] of Object.entries(op.responses)) {
            if (status !== 'default' && Number(status) < 400) continue;
            type Example = { error: number; message: string };
            const media = response.content?.['application/json'] as
              { example?: Example; examples?: Record<string, { value: Example }> } | undefined;
            // One example, or (POST /plants, one plant or a batch) several named ones.
            const examples = media?.example
              ? [media.example]
              : Object.values(media?.examples ?? {}).map((e) => e.value);
            assert.ok(examples.length > 0, `${key} ${status}: an example`);
            for (const example of examples) {
              assert.deepEqual(Object.keys(example).sort(), ['error', 'message'], `${key} ${status}`);
              if (status === 'default') {
                assert.match(response.description, new RegExp(`\\b${example.error}\\b`), `${key}: default names it`);
              } else assert.equal(example.error, Number(status), `${key} ${status}: its own status`);
              assert.ok(
                example.message.length > 10 && example.message !== 'string',
                `${key} ${status}: a real message`,
              );
            }
            // Where this suite made the operation answer that status, an example is one of the answers, numbers
            // aside (its id, a limit). A 429's wording depends on which limit was hit.
            const answered = messages.get(`${key} ${status}`);
            if (answered !== undefined && status !== '429') {
              const numbersAside = (m: string) => m.replace(/-?\d+/g, 'N');
              const real = [...answered].map(numbersAside);
              assert.ok(
                examples.some((e) => real.includes(numbersAside(e.message))),
                `${key} ${status}: none of ${examples.map((e) => e.message).join(' | ')} in ${[...answered].join(' | ')}`,
              );
              checked++;
            }
          }
        }
      }
      assert.ok(checked >= 20, `examples checked against real answers: ${checked}`);
    });
  });

  // What the server may answer on any operation, before or instead of running
  // it. A listening server with short timeouts: Node itself sees most of these
  // (a late head, oversized headers, an Expect), which app.inject cannot send.
  describe('statuses any operation may answer are declared for each operation', () => {
    let app: FastifyInstance;
    let port: number;
    let authorization: string;
    let closed = false;
    before(async () => {
      const limits = { headersTimeoutMs: 1000, requestTimeoutMs: 2000 };
      const store = await fx.open(limits);
      app = await buildApp(fx.config(limits), { store });
      app.addHook('onClose', async () => store.close());
      await app.listen({ host: '127.0.0.1', port: 0 });
      port = (app.server.address() as AddressInfo).port;
      authorization = `Authorization: Bearer ${(await issueToken(store.tokens, { owner: newOwner('any') })).token}\r\n`;
    });
    after(async () => {
      if (!closed) await app?.close();
    });

    /** Every operation in the document, with a URL that reaches it. */
    const operations = () =>
      Object.entries(doc.paths).flatMap(([path, ops]) =>
        Object.keys(ops).map((method) => ({ path, method, url: path.replace('{id}', '1') })),
      );

    /**
     * Checks that `data`, all the server sent, is `status` with the Error body,
     * and that the document declares that status for the operation, by its own
     * entry or by `default`, whose description then names it.
     */
    function assertDeclared(path: string, method: string, status: number, data: string): void {
      const key = `${method.toUpperCase()} ${path}`;
      assert.equal(Number(data.slice(9, 12)), status, `${key}: ${JSON.stringify(data.slice(0, 300))}`);
      const body = JSON.parse(data.slice(data.indexOf('\r\n\r\n') + 4)) as unknown;
      const entry = declared(doc.paths[path]![method]!, String(status));
      assert.ok(entry, `${key} answered ${status}, which its document does not declare, not even as default`);
      if (entry.key === 'default')
        assert.match(entry.response.description, new RegExp(`\\b${status}\\b`), `${key}: default names ${status}`);
      const validate = schemaAt(
        pointer('paths', path, method, 'responses', entry.key, 'content', 'application/json', 'schema'),
      );
      assert.ok(validate(body), `${key} ${status}: ${JSON.stringify(body)} breaks ${JSON.stringify(validate.errors)}`);
    }

    /**
     * Sends each operation the raw request `request` makes, each on a
     * connection of its own, all at once; each must be answered `status`, as declared.
     */
    async function eachOperation(
      status: number,
      request: (method: string, url: string) => string,
      drive: (socket: Socket, request: string) => void = (socket, r) => socket.write(r),
    ): Promise<void> {
      await Promise.all(
        operations().map(async ({ path, method, url }) => {
          const { data } = await exchange(port, (socket) => drive(socket, request(method.toUpperCase(), url)), 8000);
          assertDeclared(path, method, status, data);
        }),
      );
    }

    const head = (method: string, url: string, lines = '') =>
      `${method} ${url} HTTP/1.1\r\nHost: x\r\n${authorization}${lines}Connection: close\r\n\r\n`;

    it('covers every operation of the document', () => {
      assert.deepEqual(
        operations()
          .map((o) => `${o.method} ${o.path}`)
          .sort(),
        [
          'delete /plants/{id}',
          'get /healthz',
          'get /plants',
          'get /plants/events',
          'get /plants/{id}',
          'get /readyz',
          'post /plants',
        ],
      );
    });

    it('400 for a request with two Host headers', async () => {
      await eachOperation(400, (m, url) => head(m, url, 'Host: y\r\n'));
    });

    it('408 for a request head that does not arrive in time', { timeout: 10_000 }, async () => {
      await eachOperation(
        408,
        (m, url) => `${m} ${url} HTTP/1.1\r\nHost: x\r\n${authorization}`,
        (socket, start) => {
          socket.write(start);
          trickle(socket, 'X-Slow: y\r\n', 200);
        },
      );
    });

    it('417 for an Expect other than 100-continue', async () => {
      await eachOperation(417, (m, url) => head(m, url, 'Expect: 200-ok\r\n'));
    });

    it('431 for request headers over the limit', async () => {
      await eachOperation(431, (m, url) => head(m, url, `X-Large: ${'a'.repeat(32 * 1024)}\r\n`));
    });

    it('501 for a Transfer-Encoding other than chunked', async () => {
      await eachOperation(
        501,
        (m, url) =>
          head(m, url, 'Content-Type: application/json\r\nTransfer-Encoding: gzip, chunked\r\n') + '0\r\n\r\n',
      );
    });

    it('503 for a request that arrives while the server shuts down', { timeout: 10_000 }, async () => {
      // Each request's head is under way when the shutdown starts, so its
      // connection is not closed as idle, and is answered once the head is whole.
      const received: Socket[] = [];
      app.server.on('connection', (socket: Socket) => received.push(socket));
      const finish: Array<() => void> = [];
      const answered = operations().map(({ path, method, url }) =>
        exchange(
          port,
          (socket) => {
            socket.write(`${method.toUpperCase()} ${url} HTTP/1.1\r\n`);
            finish.push(() => socket.write(`Host: x\r\n${authorization}\r\n`));
          },
          8000,
        ).then(({ data }) => assertDeclared(path, method, 503, data)),
      );
      const n = answered.length;
      await eventually(() => received.length === n && received.every((s) => s.bytesRead > 0), 5000, {
        what: 'the server to read each request line',
      });
      closed = true;
      const closing = app.close();
      // The server stops listening once the app refuses new requests.
      await eventually(() => !app.server.listening, 5000, { stepMs: 10, what: 'the shutdown to start' });
      for (const write of finish) write();
      await Promise.all(answered);
      await closing;
    });
  });

  // The pattern of a string id cannot say the int64 range: strings of up to 20
  // digits outside it (and integers outside it) are left out here.
  describe('the document and the server agree on request bodies', () => {
    const bodies: Array<[string, Record<string, unknown> | unknown[]]> = [
      [
        'a batch of two plants',
        [
          { id: 120, name: 'Fern' },
          { id: '121', name: 'Moss', tag: '' },
        ],
      ],
      ['an empty batch', []],
      [
        'a batch with an invalid plant',
        [
          { id: 122, name: 'Fern' },
          { id: 123, name: '' },
        ],
      ],
      ['a batch with an unknown property', [{ id: 124, name: 'Fern', color: 'red' }]],
      ['a batch inside a batch', [[{ id: 125, name: 'Fern' }]]],
      ['a plant with a tag', { id: 100, name: 'Fern', tag: 'green' }],
      ['a plant without a tag', { id: 101, name: 'Moss' }],
      ['an empty tag', { id: 102, name: 'Ivy', tag: '' }],
      ['a 256-character name', { id: 103, name: 'n'.repeat(256) }],
      ['a 257-character name', { id: 104, name: 'n'.repeat(257) }],
      ['an empty name', { id: 105, name: '' }],
      ['a null tag', { id: 106, name: 'x', tag: null }],
      ['an unknown property', { id: 107, name: 'x', color: 'red' }],
      ['no id', { name: 'x' }],
      ['a string id', { id: '108', name: 'x' }],
      ['the largest id as a string', { id: '9223372036854775807', name: 'x' }],
      ['the smallest id as a string', { id: '-9223372036854775808', name: 'x' }],
      ['a string id with leading zeros', { id: '0110', name: 'x' }],
      ['an empty string id', { id: '', name: 'x' }],
      ['a string id with a fraction', { id: '1.0', name: 'x' }],
      ['a string id with a plus sign', { id: '+1', name: 'x' }],
      ['a string id with a space', { id: ' 1', name: 'x' }],
      ['a hexadecimal string id', { id: '0x10', name: 'x' }],
      ['a 21-digit string id', { id: '100000000000000000000', name: 'x' }],
      ['a fractional id', { id: 108.5, name: 'x' }],
      ['a name of 129 characters outside the BMP', { id: 109, name: '\u{1F33F}'.repeat(129) }],
    ];
    for (const [what, body] of bodies) {
      it(`${what}: accepted by the server exactly when the documented schema accepts it`, async () => {
        const token = await h.token(newOwner('agree'));
        const valid = schemaAt(
          pointer('paths', '/plants', 'post', 'requestBody', 'content', 'application/json', 'schema'),
        )(body);
        const res = await createRaw(h, token, JSON.stringify(body));
        assert.equal(
          res.statusCode,
          valid ? 200 : 400,
          `document says ${valid ? 'valid' : 'invalid'}, server answered ${res.statusCode}: ${res.body}`,
        );
      });
    }
  });
});
