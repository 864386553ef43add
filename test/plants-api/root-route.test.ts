// GET / points whoever opens the server's address at the API, its reference
// page and its document; the reference page names /openapi.json under its title.
import assert from 'node:assert/strict';
import type { FastifyInstance } from 'fastify';
import { chromiumMissing, launchChromium } from '../helpers/chromium.js';
import { after, before, describe, it, needs } from '../helpers/requirements.js';
import { useApp } from '../helpers/app.js';
import { describeOnStore } from '../helpers/stores.js';
import { buildApp } from '../../src/app/app.js';

describeOnStore('sqlite', 'GET /', (fx) => {
  const h = useApp(fx);

  it('answers without a token with a JSON pointer to /docs and /openapi.json', { timeout: 10_000 }, async () => {
    const res = await h.request({ method: 'GET', url: '/' });
    assert.equal(res.statusCode, 200);
    assert.match(String(res.headers['content-type']), /^application\/json/);
    const body = res.json<Record<string, string>>();
    assert.equal(body.docs, '/docs');
    assert.equal(body.openapi, '/openapi.json');
    for (const path of [body.docs, body.openapi]) {
      assert.equal((await h.request({ method: 'GET', url: path! })).statusCode, 200, `${path} is there`);
    }
  });

  it('is not part of the API document', { timeout: 10_000 }, async () => {
    const doc = (await h.request({ method: 'GET', url: '/openapi.json' })).json<{ paths: object }>();
    assert.ok(!('/' in doc.paths));
  });
});

needs(chromiumMissing, () => {
  describeOnStore('sqlite', 'the reference page title', (fx) => {
    let app: FastifyInstance;
    let base = '';
    before(async () => {
      app = await buildApp(fx.config(), { store: await fx.open() });
      base = await app.listen({ host: '127.0.0.1', port: 0 });
    });
    after(() => app?.close());

    describe('in a browser', () => {
      it('links to /openapi.json', { timeout: 60_000 }, async () => {
        const chrome = await launchChromium();
        try {
          const page = await chrome.newPage();
          await page.goto(`${base}/docs`);
          const link = page.locator('.info a.link').first();
          await link.waitFor({ timeout: 20_000 });
          assert.equal(await link.getAttribute('href'), '/openapi.json');
          assert.match(await link.innerText(), /\/openapi\.json/);
        } finally {
          await chrome.close();
        }
      });
    });
  });
});
