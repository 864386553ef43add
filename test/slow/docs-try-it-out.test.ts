// The /docs page fills its "Try it out" forms from the schemas' examples, so
// that a reader who pastes a token can create, list and delete a plant
// without editing anything: the forms hold an id past 2^53 (as a string),
// "Monstera" and "tropical", and executing them works. Driven in Debian's chromium.
import assert from 'node:assert/strict';
import type { FastifyInstance } from 'fastify';
import type { Browser, Locator, Page } from 'playwright-core';
import { chromiumMissing, launchChromium } from '../helpers/chromium.js';
import { after, before, it, needs } from '../helpers/requirements.js';
import { describeOnStore } from '../helpers/stores.js';
import { buildApp } from '../../src/app/app.js';
import { issueToken } from '../../src/auth/tokens.js';
import type { Store } from '../../src/store/store.js';
import { listPlants } from '../helpers/list-plants.js';

needs(chromiumMissing, () => {
  describeOnStore('sqlite', 'the /docs forms, filled from the examples', (fx) => {
    let store: Store;
    let app: FastifyInstance;
    let browser: Browser;
    let page: Page;
    let token = '';

    before(async () => {
      store = await fx.open();
      app = await buildApp(fx.config(), { store });
      const base = await app.listen({ host: '127.0.0.1', port: 0 });
      token = (await issueToken(store.tokens, { owner: 'try-it-out' })).token;
      browser = await launchChromium();
      page = await browser.newPage();
      await page.goto(`${base}/docs`);
      await page.locator('#operations-plants-createPlant').waitFor({ timeout: 20_000 });
    });
    after(async () => {
      await browser?.close();
      await app?.close();
    });

    async function open(operationId: string): Promise<Locator> {
      const op = page.locator(`#operations-plants-${operationId}`);
      await op.locator('.opblock-summary').click();
      const tryIt = op.locator('button.try-out__btn', { hasText: 'Try it out' });
      if (await tryIt.count()) await tryIt.click();
      return op;
    }

    async function execute(op: Locator): Promise<{ status: string; body: string }> {
      await op.getByRole('button', { name: 'Execute' }).click();
      const status = op.locator('.live-responses-table .response .response-col_status');
      await status.waitFor();
      const body = op.locator('.live-responses-table .response .microlight');
      return {
        status: (await status.innerText()).trim(),
        body: (await body.count()) ? await body.first().innerText() : '',
      };
    }

    it('holds the examples, and executing them creates, lists and deletes a plant', { timeout: 60_000 }, async () => {
      await page
        .getByRole('button', { name: /Authorize/ })
        .first()
        .click({ timeout: 20_000 });
      const modal = page.locator('.modal-ux');
      await modal.locator('input#auth-bearer-value').fill(token);
      await modal.getByRole('button', { name: 'Apply credentials' }).click();
      await modal.getByRole('button', { name: 'Close' }).click();

      const create = await open('createPlant');
      const body = await create.locator('textarea.body-param__text').inputValue();
      assert.deepEqual(JSON.parse(body), { id: '9007199254740993', name: 'Monstera', tag: 'tropical' });
      const created = await execute(create);
      assert.equal(created.status, '200', created.body);
      assert.deepEqual(JSON.parse(created.body), { name: 'Monstera', tag: 'tropical' });

      const list = await open('listPlants');
      assert.equal(await list.locator('input[placeholder="limit"]').inputValue(), '10');
      const listed = await execute(list);
      assert.equal(listed.status, '200', listed.body);
      assert.deepEqual(JSON.parse(listed.body), [{ name: 'Monstera', tag: 'tropical' }]);

      const remove = await open('deletePlant');
      assert.equal(await remove.locator('input[placeholder="id"]').inputValue(), '9007199254740993');
      const deleted = await execute(remove);
      assert.equal(deleted.status, '204');
      assert.deepEqual((await listPlants(store.plants, 'try-it-out', 10)).plants, []);
    });
  });
});
