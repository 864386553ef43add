import type { AddressInfo } from 'node:net';
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';
import { after, before } from './requirements.js';
import { buildApp } from '../../src/app/app.js';
import { issueToken } from '../../src/auth/tokens.js';
import type { Config } from '../../src/config.js';
import type { Scope, Store } from '../../src/store/store.js';
import type { StoreFixture } from './stores.js';

export interface AppHarness {
  app: FastifyInstance;
  store: Store;
  /** Issues a fresh token for an owner. */
  token(owner: string, opts?: { scopes?: Scope[]; expiresInMs?: number }): Promise<string>;
  /** app.inject with a bearer token and JSON body helpers. */
  request(opts: InjectOptions & { token?: string | undefined; json?: unknown }): Promise<LightMyRequestResponse>;
}

/** One app (via app.inject, no socket) per suite, on the suite's fresh database. */
export function useApp(fx: StoreFixture, overrides: Partial<Config> = {}): AppHarness {
  const h = {} as AppHarness;
  before(async () => {
    h.store = await fx.open(overrides);
    h.app = await buildApp(fx.config(overrides), { store: h.store });
    await h.app.ready();
  });
  after(async () => {
    await h.app?.close();
  });
  h.token = async (owner, opts = {}) => (await issueToken(h.store.tokens, { owner, ...opts })).token;
  h.request = ({ token, json, headers, ...rest }) => {
    const allHeaders: Record<string, string> = { ...(headers as Record<string, string>) };
    if (token !== undefined) allHeaders.authorization = `Bearer ${token}`;
    if (json !== undefined) allHeaders['content-type'] ??= 'application/json';
    return h.app.inject({
      ...rest,
      headers: allHeaders,
      ...(json !== undefined ? { payload: typeof json === 'string' ? json : JSON.stringify(json) } : {}),
    });
  };
  return h;
}

/** An app listening on an ephemeral loopback port, on its own store of the suite's database. */
export interface ListeningApp {
  app: FastifyInstance;
  store: Store;
  /** http://127.0.0.1:PORT */
  base: string;
}

export async function listenApp(fx: StoreFixture, overrides: Partial<Config> = {}): Promise<ListeningApp> {
  const store = await fx.open(overrides);
  const app = await buildApp(fx.config(overrides), { store });
  await app.listen({ host: '127.0.0.1', port: 0 });
  return { app, store, base: `http://127.0.0.1:${(app.server.address() as AddressInfo).port}` };
}
