// A listening app for the /docs page suites (over HTTP and in chromium): the
// suite's store, one plant of owner docs-reader, and that owner's token.
import assert from 'node:assert/strict';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../src/app/app.js';
import { issueToken } from '../../src/auth/tokens.js';
import { after, before } from './requirements.js';
import type { StoreFixture } from './stores.js';

export interface DocsServer {
  /** http://127.0.0.1:PORT */
  readonly base: string;
  readonly token: string;
}

/** Call inside a suite: listens before its tests, closes after them. */
export function useDocsServer(fx: StoreFixture): DocsServer {
  let app: FastifyInstance | undefined;
  const server = { base: '', token: '' };
  before(async () => {
    const store = await fx.open();
    app = await buildApp(fx.config(), { store });
    server.base = await app.listen({ host: '127.0.0.1', port: 0 });
    server.token = (await issueToken(store.tokens, { owner: 'docs-reader' })).token;
    const res = await fetch(`${server.base}/plants`, {
      method: 'POST',
      headers: { authorization: `Bearer ${server.token}`, 'content-type': 'application/json' },
      body: '{"id":"9007199254740993","name":"Monstera","tag":"tropical"}',
    });
    assert.equal(res.status, 200);
  });
  after(async () => {
    await app?.close();
  });
  return server;
}
