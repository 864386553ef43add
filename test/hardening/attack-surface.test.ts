// The attack surface as SECURITY.md describes it: the API takes no URL, serves
// only what its document lists, answers everything with the security headers
// and without framework fingerprints, keeps input away from SQL, and tells a
// client nothing about its internals when the store fails.
import assert from 'node:assert/strict';
import { useApp } from '../helpers/app.js';
import { createRaw, expectError, jsonBody, newOwner } from '../helpers/plants-http.js';
import { describeEachStore, describeHttpLayer } from '../helpers/stores.js';
import { it } from '../helpers/requirements.js';

interface OpenApiDoc {
  paths: Record<
    string,
    Record<
      string,
      {
        parameters?: Array<{ name: string }>;
        requestBody?: { content: Record<string, { schema: { $ref?: string; properties?: object } }> };
      }
    >
  >;
  components: { schemas: Record<string, { properties?: object; allOf?: Array<{ properties?: object }> }> };
}

const HTTP_METHODS = new Set(['get', 'post', 'put', 'patch', 'delete', 'head', 'options']);

describeHttpLayer('attack surface', (fx) => {
  const h = useApp(fx);

  async function doc(): Promise<OpenApiDoc> {
    return jsonBody(await h.request({ method: 'GET', url: '/openapi.json' })) as OpenApiDoc;
  }

  it('takes no URL from a client: every input is one of limit, cursor, id, name, tag, Last-Event-ID, If-None-Match (API7)', async () => {
    const d = await doc();
    const inputs = new Set<string>();
    type Schema = { $ref?: string; properties?: object; oneOf?: Schema[]; items?: Schema };
    const propertiesOf = (schema: Schema | undefined): string[] => {
      if (!schema) return [];
      if (schema.oneOf) return schema.oneOf.flatMap(propertiesOf);
      if (schema.items) return propertiesOf(schema.items);
      if (schema.$ref) {
        const component = d.components.schemas[schema.$ref.split('/').pop()!]!;
        return [
          ...Object.keys(component.properties ?? {}),
          ...(component.allOf ?? []).flatMap((part) => propertiesOf(part as { $ref?: string; properties?: object })),
        ];
      }
      return Object.keys(schema.properties ?? {});
    };
    for (const ops of Object.values(d.paths)) {
      for (const [method, op] of Object.entries(ops)) {
        if (!HTTP_METHODS.has(method)) continue;
        for (const p of op.parameters ?? []) inputs.add(p.name);
        for (const media of Object.values(op.requestBody?.content ?? {})) {
          for (const name of propertiesOf(media.schema)) inputs.add(name);
        }
      }
    }
    assert.deepEqual([...inputs].sort(), ['cursor', 'id', 'if-none-match', 'last-event-id', 'limit', 'name', 'tag']);
  });

  it('serves nothing its document does not list (API9)', async () => {
    const token = await h.token(newOwner('surf'));
    for (const url of [
      '/admin',
      '/debug',
      '/env',
      '/.env',
      '/.git/config',
      '/plants/1/owner',
      '/tokens',
      '/v2/plants',
    ]) {
      for (const method of ['GET', 'POST'] as const) {
        expectError(await h.request({ method, url, token }), 404, /no route/);
      }
    }
    const d = await doc();
    assert.deepEqual(Object.keys(d.paths).sort(), ['/healthz', '/plants', '/plants/events', '/plants/{id}', '/readyz']);
  });

  it('sends the security headers and no framework fingerprint or CORS grant on every kind of answer (API8)', async () => {
    const token = await h.token(newOwner('surf'));
    const answers = [
      await createRaw(h, token, '{"id":1,"name":"x"}'),
      await h.request({ method: 'GET', url: '/plants', token }),
      await h.request({ method: 'GET', url: '/plants', headers: { origin: 'https://evil.example' } }),
      await h.request({ method: 'GET', url: '/nowhere', token }),
      await h.request({ method: 'PUT', url: '/plants', token }),
      await h.request({ method: 'TRACE' as 'GET', url: '/plants', token }),
      await h.request({ method: 'GET', url: '/healthz' }),
      await h.request({ method: 'GET', url: '/openapi.json' }),
    ];
    for (const res of answers) {
      const what = `${res.statusCode} ${res.body.slice(0, 80)}`;
      assert.equal(res.headers['x-content-type-options'], 'nosniff', what);
      assert.equal(res.headers['cache-control'], 'no-store', what);
      assert.match(String(res.headers['content-security-policy']), /default-src 'none'; frame-ancestors 'none'/, what);
      assert.equal(res.headers['x-powered-by'], undefined, what);
      assert.equal(res.headers['server'], undefined, what);
      assert.equal(res.headers['access-control-allow-origin'], undefined, what);
      assert.ok(res.statusCode !== 500 && !/\n\s+at /.test(res.body), `${what}: no 500 and no stack trace`);
    }
  });
});

// What the API hands to the store, and what it makes of the store's failures,
// goes through each store's own code: checked on every store.
describeEachStore('attack surface at the store', (fx) => {
  const h = useApp(fx);

  it('keeps input away from SQL: text that looks like SQL is stored and listed verbatim (API10)', async () => {
    const token = await h.token(newOwner('surf'));
    const names = ["x'); DROP TABLE plants; --", '" OR 1=1 --', '\\x00\\\\; SELECT pg_sleep(10)'];
    for (const [i, name] of names.entries()) {
      const res = await createRaw(h, token, JSON.stringify({ id: i + 1, name, tag: name }));
      assert.equal(res.statusCode, 200, res.body);
    }
    const listed = jsonBody(await h.request({ method: 'GET', url: '/plants', token })) as { name: string }[];
    assert.deepEqual(
      listed.map((p) => p.name),
      names,
    );
  });

  it('tells a client nothing about the store when it fails: 503 with a fixed message (API8, API10)', async () => {
    const token = await h.token(newOwner('surf'));
    const store = await fx.open();
    await store.close();
    const closedApp = await (await import('../../src/app/app.js')).buildApp(fx.config(), { store });
    try {
      for (const [method, url, payload] of [
        ['POST', '/plants', '{"id":1,"name":"x"}'],
        ['DELETE', '/plants/1', undefined],
        ['GET', '/readyz', undefined],
      ] as const) {
        const res = await closedApp.inject({
          method,
          url,
          headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
          ...(payload ? { payload } : {}),
        });
        // The bearer check needs the store too: either way the answer is a bare 503.
        assert.equal(res.statusCode, 503, res.body);
        assert.deepEqual(JSON.parse(res.body), {
          error: 503,
          message: 'the store is unavailable, try again shortly',
        });
      }
    } finally {
      await closedApp.close();
    }
  });
});
