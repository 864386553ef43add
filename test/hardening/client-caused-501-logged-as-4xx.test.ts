// A 501 is what the request asked for that the server does not implement (a
// transfer coding): the client's doing, so it is logged like a 4xx, never at
// error level with a stack, whatever the logging settings. Otherwise anyone
// could fill the log with stacks and set off the 5xx alert with a header.
import assert from 'node:assert/strict';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../src/app/app.js';
import { issueToken } from '../../src/auth/tokens.js';
import type { Config } from '../../src/config.js';
import type { Store } from '../../src/store/store.js';
import { keptLines } from '../helpers/log-lines.js';
import { describeHttpLayer } from '../helpers/stores.js';
import { after, before, it } from '../helpers/requirements.js';

describeHttpLayer('a 501 the client caused, in the log', (fx) => {
  let store: Store;
  let token: string;
  const apps: FastifyInstance[] = [];
  before(async () => {
    store = await fx.open();
    token = (await issueToken(store.tokens, { owner: 'coding' })).token;
  });
  after(async () => {
    for (const app of apps) await app.close();
  });

  /** The lines an app with `overrides` logs while answering a `gzip, chunked` create. */
  async function logged(overrides: Partial<Config>): Promise<Record<string, unknown>[]> {
    const { stream, lines } = keptLines();
    const app = await buildApp(fx.config(overrides), { store, logStream: stream });
    apps.push(app);
    const res = await app.inject({
      method: 'POST',
      url: '/plants',
      headers: {
        authorization: `Bearer ${token}`,
        'content-type': 'application/json',
        'transfer-encoding': 'gzip, chunked',
      },
      payload: '{"id":1,"name":"x"}',
    });
    assert.equal(res.statusCode, 501, res.body);
    return lines.map((l) => JSON.parse(l) as Record<string, unknown>);
  }

  it('is not logged by default, where a 5xx would be logged with its cause', async () => {
    const lines = await logged({ logLevel: 'info' });
    assert.deepEqual(
      lines.filter((l) => (l.level as number) >= 40 || JSON.stringify(l).includes('stack')),
      [],
    );
  });

  it('gets an info line without a stack with --access-log', async () => {
    const lines = (await logged({ logLevel: 'info', accessLog: true })).filter((l) => l.statusCode === 501);
    assert.equal(lines.length, 1, JSON.stringify(lines));
    assert.equal(lines[0]!.level, 30, JSON.stringify(lines[0]));
    assert.equal(lines[0]!.msg, 'request completed');
    assert.equal(lines[0]!.err, undefined);
  });
});
