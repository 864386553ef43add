// A full disk under serve --workers 2, as a real cluster on a small tmpfs:
// every worker answers 503 and is not ready, and once the disk has room again
// each of them, and the primary's admin port that asks them, is ready within
// a second of the first write that succeeds. The one-process case is in
// test/hardening/sqlite-disk-faults.test.ts.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expectErrorBody } from '../helpers/pg.js';
import { after, before, describe, it, needs } from '../helpers/requirements.js';
import { adminUrlOf, httpRequest, useProcessCleanup } from '../helpers/server.js';
import { diskFull, readyAfterFirstWrite, readyz, tmpfs } from '../helpers/disk-full.js';

needs(tmpfs, () =>
  describe('a full disk under serve --workers 2', () => {
    useProcessCleanup();
    let dir: string;
    before(() => {
      dir = mkdtempSync(join(tmpdir(), 'plant-store-workers-disk-'));
    });
    after(() => rmSync(dir, { recursive: true, force: true }));

    it('every worker is ready again within 1 s of the first write that succeeds, and so is the admin port', async () => {
      // A load balancer's health checks ask all along, as they would in production.
      let checking = true;
      let checks: Promise<void> | undefined;
      await diskFull(dir, ['--workers', '2', '--admin-port', '0'], async (server, answer) => {
        // The primary's admin /readyz asks the workers, which are the ones that write.
        const admin = await adminUrlOf(server);
        const notReady = await httpRequest(`${admin}/readyz`);
        expectErrorBody(notReady, 503, 'admin /readyz on a full disk');
        assert.match(notReady.body, /worker \d/);
        checks = (async () => {
          while (checking) {
            await readyz(server);
            await new Promise((r) => setTimeout(r, 100));
          }
        })();
        try {
          // Two workers take connections in turn: 4 in a row is each of them twice. Each worker is ready within 1 s;
          // the four answers in a row that show it for both get another second on a loaded machine.
          await readyAfterFirstWrite(server, answer, 4, 2000);
          const ready = await httpRequest(`${admin}/readyz`);
          assert.equal(ready.status, 200, `admin /readyz once every worker is ready: ${ready.body}`);
        } finally {
          checking = false;
          await checks;
        }
      });
    });
  }),
);
