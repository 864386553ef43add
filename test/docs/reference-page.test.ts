// GET /docs: the interactive API reference, served by Plant Store alone, over
// HTTP. The browser checks (test/slow/docs-browser.test.ts) drive chromium.
import assert from 'node:assert/strict';
import { describe, it } from '../helpers/requirements.js';
import { DOCS_CSP } from '../../src/routes/docs.js';
import { useDocsServer } from '../helpers/docs-server.js';
import { describeOnStore } from '../helpers/stores.js';

describeOnStore('sqlite', 'GET /docs, the API reference page', (fx) => {
  const docs = useDocsServer(fx);

  describe('over HTTP', () => {
    it('is served without a token, as HTML under its own Content-Security-Policy', async () => {
      const res = await fetch(`${docs.base}/docs`);
      assert.equal(res.status, 200);
      assert.match(String(res.headers.get('content-type')), /^text\/html/);
      assert.equal(res.headers.get('content-security-policy'), DOCS_CSP);
      assert.equal(res.headers.get('x-content-type-options'), 'nosniff');
      assert.equal(res.headers.get('cache-control'), 'no-store');
      const html = await res.text();
      assert.doesNotMatch(html, /(?:src|href)="(?:https?:)?\/\//, 'every asset is loaded from this server');
      for (const asset of html.match(/(?:src|href)="([^"]+)"/g) ?? []) {
        const path = /"([^"]+)"/.exec(asset)![1]!;
        const assetRes = await fetch(new URL(path, `${docs.base}/docs`));
        assert.equal(assetRes.status, 200, path);
        assert.equal(assetRes.headers.get('content-security-policy'), DOCS_CSP, path);
        // Files from the package are revalidated with their ETag; generated ones are not stored.
        const cache = assetRes.headers.get('cache-control');
        assert.ok(
          cache === 'no-store' || (cache === 'public, max-age=0' && assetRes.headers.get('etag')),
          `${path}: Cache-Control ${cache}`,
        );
        await assetRes.arrayBuffer();
      }
    });

    it('leaves the rest of the API under default-src none', async () => {
      for (const path of ['/openapi.json', '/plants', '/healthz', '/nowhere']) {
        const res = await fetch(`${docs.base}${path}`);
        await res.arrayBuffer();
        assert.equal(res.headers.get('content-security-policy'), "default-src 'none'; frame-ancestors 'none'", path);
      }
    });
  });
});
