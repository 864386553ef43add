// watchPlants in Chromium: a page served by the test (on its own origin, so
// through CORS) loads the built client, follows the live stream of a server
// on another port, and receives events with exact bigint ids.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance } from 'fastify';
import type { Browser } from 'playwright-core';
import { buildApp } from '../../src/app/app.js';
import { issueToken } from '../../src/auth/tokens.js';
import type { Store } from '../../src/store/store.js';
import { chromiumMissing, launchChromium } from '../helpers/chromium.js';
import { after, before, it, needs } from '../helpers/requirements.js';
import { describeOnStore } from '../helpers/stores.js';

/** The built client package: dist/packages/client/src/, next to this file's dist/test/slow/. */
const CLIENT_DIR = fileURLToPath(new URL('../../packages/client/src/', import.meta.url));

const PAGE = `<!doctype html><meta charset="utf-8"><title>watch</title>
<script type="module">
  import { PlantStoreClient } from '/client/index.js';
  window.got = [];
  window.watch = (baseUrl, token) => {
    const client = new PlantStoreClient({ baseUrl, token });
    (async () => {
      for await (const change of client.watchPlants()) {
        const { id, ...rest } = change.data;
        window.got.push({ type: change.type, id: String(id), isBigint: typeof id === 'bigint', ...rest });
      }
    })().catch((e) => window.got.push({ error: String(e) }));
  };
  window.ready = true;
</script>`;

needs(chromiumMissing, () =>
  describeOnStore('sqlite', 'watchPlants in a browser', (fx) => {
    let app: FastifyInstance;
    let pages: Server;
    let browser: Browser | undefined;
    let api = '';
    let origin = '';
    let tokens: Store['tokens'];

    before(async () => {
      pages = createServer((req, res) => {
        const file = req.url?.match(/^\/client\/([a-z-]+\.js)$/)?.[1];
        if (file) {
          res.writeHead(200, { 'content-type': 'text/javascript' }).end(readFileSync(CLIENT_DIR + file));
        } else res.writeHead(200, { 'content-type': 'text/html' }).end(PAGE);
      });
      await new Promise<void>((resolve) => pages.listen(0, '127.0.0.1', resolve));
      origin = `http://127.0.0.1:${(pages.address() as AddressInfo).port}`;
      const store = await fx.open();
      tokens = store.tokens;
      app = await buildApp(fx.config({ corsOrigin: origin }), { store });
      await app.listen({ host: '127.0.0.1', port: 0 });
      api = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
    });
    after(async () => {
      await browser?.close();
      await app?.close();
      pages?.close();
    });

    it('receives created and deleted plants with exact ids', { timeout: 60_000 }, async () => {
      browser = await launchChromium();
      const page = await browser.newPage();
      await page.goto(origin);
      await page.waitForFunction(() => (globalThis as unknown as { ready?: boolean }).ready === true);
      const { token } = await issueToken(tokens, { owner: 'browser' });
      await page.evaluate(
        ([base, t]) => (globalThis as unknown as { watch(b: string, t: string): void }).watch(base!, t!),
        [api, token],
      );
      // The stream is open once the server counts it; then write.
      await new Promise((r) => setTimeout(r, 500));
      const auth = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
      const created = await fetch(`${api}/plants`, {
        method: 'POST',
        headers: auth,
        body: '{"id":9223372036854775807,"name":"Fern"}',
      });
      assert.equal(created.status, 200);
      const deleted = await fetch(`${api}/plants/9223372036854775807`, { method: 'DELETE', headers: auth });
      assert.equal(deleted.status, 204);
      await page.waitForFunction(() => (globalThis as unknown as { got: unknown[] }).got.length >= 2, undefined, {
        timeout: 10_000,
      });
      const got = await page.evaluate(() => (globalThis as unknown as { got: unknown[] }).got);
      assert.deepEqual(got, [
        { type: 'plant.created', id: '9223372036854775807', isBigint: true, name: 'Fern' },
        { type: 'plant.deleted', id: '9223372036854775807', isBigint: true },
      ]);
    });
  }),
);
