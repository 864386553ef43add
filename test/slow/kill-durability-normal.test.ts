// kill -9 under concurrent creates with --durability normal, on every store:
// normal still survives a crash of the process (not of the machine). The same
// check with the default durability is in kill-9-sigterm-and-workers.test.ts;
// this one repeats its seconds of load with only the setting changed.
import { before, it } from '../helpers/requirements.js';
import { killDuringCreates } from '../helpers/process-load.js';
import { migrateWithCli, useProcessCleanup } from '../helpers/server.js';
import { describeEachStore } from '../helpers/stores.js';

describeEachStore('kill -9 durability (--durability normal)', (fx) => {
  useProcessCleanup();
  before(() => migrateWithCli(fx.db));
  it('every create acknowledged with 200 is there after kill -9 and a restart', { timeout: 30_000 }, (t) =>
    killDuringCreates(t, fx, ['--durability', 'normal']),
  );
});
