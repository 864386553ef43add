// GET /docs in a real browser (the HTTP checks are in test/docs/reference-page.test.ts).
// The suite drives Debian's chromium: the page must load without a single
// request leaving the server, without page errors or failed assets, show the
// document and let a user paste a token and send a request.
import assert from 'node:assert/strict';
import { describe, it, after, needs } from '../helpers/requirements.js';
import type { Browser, Page } from 'playwright-core';
import { chromiumMissing, launchChromium } from '../helpers/chromium.js';
import { useDocsServer } from '../helpers/docs-server.js';
import { describeOnStore } from '../helpers/stores.js';

/** A test that needs chromium (the whole suite is declared under needs(chromiumMissing)). */
function browserTest(name: string, fn: () => Promise<void>): void {
  it(name, { timeout: 60_000 }, fn);
}

needs(chromiumMissing, () =>
  describeOnStore('sqlite', 'GET /docs in chromium', (fx) => {
    const docs = useDocsServer(fx);

    describe('in chromium', () => {
      let browser: Browser | undefined;
      after(async () => {
        await browser?.close();
      });

      /** A page on which any request that leaves the server, page error, console error or failed asset is recorded. */
      async function openDocs(): Promise<{ page: Page; problems: string[]; apiRequests: Map<string, string> }> {
        browser ??= await launchChromium();
        const context = await browser.newContext({ serviceWorkers: 'block' });
        const problems: string[] = [];
        const apiRequests = new Map<string, string>(); // "METHOD url" -> Authorization
        const origin = new URL(docs.base).origin;
        await context.route('**/*', async (route) => {
          const request = route.request();
          const url = new URL(request.url());
          if (url.origin !== origin) {
            problems.push(`request left the server: ${request.method()} ${request.url()}`);
            return route.abort('blockedbyclient');
          }
          if (!url.pathname.startsWith('/docs')) {
            apiRequests.set(`${request.method()} ${url.pathname}`, (await request.allHeaders()).authorization ?? '');
          }
          return route.continue();
        });
        const page = await context.newPage();
        page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
        page.on('console', (message) => {
          if (message.type() === 'error') problems.push(`console error: ${message.text()}`);
        });
        page.on('requestfailed', (request) =>
          problems.push(`failed: ${request.url()} ${request.failure()?.errorText}`),
        );
        page.on('response', (response) => {
          if (response.url().includes('/docs') && response.status() >= 400)
            problems.push(`asset ${response.url()} answered ${response.status()}`);
        });
        const res = await page.goto(`${docs.base}/docs`);
        assert.equal(res?.status(), 200);
        return { page, problems, apiRequests };
      }

      browserTest('shows version 1.0.0 and the three plant operations, loading nothing from elsewhere', async () => {
        const { page, problems } = await openDocs();
        await page.locator('#operations-plants-createPlant').waitFor({ timeout: 20_000 });
        assert.match(await page.locator('.info .title').innerText(), /Plant Store/);
        assert.match(await page.locator('.info .version').first().innerText(), /^\s*1\.0\.0\s*$/);
        for (const [id, method, path] of [
          ['createPlant', 'POST', '/plants'],
          ['listPlants', 'GET', '/plants'],
          ['deletePlant', 'DELETE', '/plants/{id}'],
        ] as const) {
          const op = page.locator(`#operations-plants-${id}`);
          assert.equal((await op.locator('.opblock-summary-method').innerText()).trim(), method);
          assert.equal((await op.locator('.opblock-summary-path').innerText()).trim().replace(/\u200b/g, ''), path);
        }
        await page.waitForLoadState('networkidle');
        assert.deepEqual(problems, []);
      });

      browserTest('a pasted token is sent with a list request, which answers 200', async () => {
        const { page, problems, apiRequests } = await openDocs();
        await page
          .getByRole('button', { name: /Authorize/ })
          .first()
          .click({ timeout: 20_000 });
        const modal = page.locator('.modal-ux');
        await modal.locator('input#auth-bearer-value').fill(docs.token);
        await modal.getByRole('button', { name: 'Apply credentials' }).click();
        await modal.getByRole('button', { name: 'Close' }).click();

        const list = page.locator('#operations-plants-listPlants');
        await list.locator('.opblock-summary').click();
        await list.getByRole('button', { name: 'Execute' }).click();
        const status = list.locator('.live-responses-table .response .response-col_status');
        await status.waitFor();
        assert.equal((await status.innerText()).trim(), '200');
        const body = await list.locator('.live-responses-table .response .microlight').first().innerText();
        assert.deepEqual(JSON.parse(body), [{ name: 'Monstera', tag: 'tropical' }]);
        assert.equal(apiRequests.get('GET /plants'), `Bearer ${docs.token}`);
        assert.deepEqual(problems, []);
      });

      browserTest('the stream operation says the page cannot show a stream and gives the curl line', async () => {
        const { page, problems, apiRequests } = await openDocs();
        const watch = page.locator('#operations-plants-watchPlants');
        await watch.locator('.opblock-summary').click({ timeout: 20_000 });
        const note = watch.locator('.plants-stream-note');
        await note.waitFor();
        assert.match(await note.innerText(), /cannot show a stream/);
        const curl = (await watch.locator('.plants-stream-curl').innerText()).trim();
        assert.equal(
          curl,
          `curl -N -H "Accept: text/event-stream" -H "Authorization: Bearer $TOKEN" ${new URL(docs.base).origin}/plants/events`,
        );
        assert.equal(await watch.getByRole('button', { name: 'Execute' }).count(), 0, 'no Execute to spin on');
        assert.equal(await watch.locator('.loading-container, .loading').count(), 0, 'no LOADING');
        assert.equal(apiRequests.has('GET /plants/events'), false, 'the page never opened the stream');
        // The other operations keep their Execute button.
        const list = page.locator('#operations-plants-listPlants');
        await list.locator('.opblock-summary').click();
        assert.equal(await list.getByRole('button', { name: 'Execute' }).count(), 1);
        assert.deepEqual(problems, []);
      });
    });
  }),
);
