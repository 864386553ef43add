// A full disk under serve --workers 2: every worker answers 503 and is not
// ready, and so is the primary's admin /readyz, which asks them; once there
// is room, every worker is ready within a second of the first write that
// succeeds, and the admin port with them. A cluster on a tmpfs (root only),
// so it runs with the slow checks; the one-process check is in
// test/hardening/sqlite-disk-faults.test.ts.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { diskFull, readyAfterFirstWrite, readyz, tmpfs } from '../helpers/disk-full.js';
import { expectErrorBody } from '../helpers/pg.js';
import { after, describe, it, needs } from '../helpers/requirements.js';
import { adminUrlOf, httpRequest, useProcessCleanup } from '../helpers/server.js';

describe('SQLite disk full with --workers 2', () => {
  useProcessCleanup();
  const dir = mkdtempSync(join(tmpdir(), 'plant-store-full-workers-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  needs(tmpfs, () => {
    it('disk full with --workers 2: every worker is ready again within 1 s of the first write that succeeds, and so is the admin port', async () => {
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
  });
});
