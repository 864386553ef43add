// The high-availability guide's commands as written, against the settings
// file deploy/ha/cluster.sh writes: `. DIR/cluster.env` sets every variable
// (PATRONICTL to the whole command, -c FILE included) without running
// anything, and `$PATRONICTL list` calls patronictl with that file. The whole
// cluster runs in test/slow/ha-failover.test.ts.
import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from '../helpers/requirements.js';
import { runGuideEnvLines, sourceClusterEnv, writeClusterEnv } from '../helpers/cluster-env.js';

const PORTS = {
  HAPROXY_PORT: 5000,
  ETCD_PORT: 2379,
  NODE1_PG_PORT: 5433,
  NODE2_PG_PORT: 5434,
  NODE3_PG_PORT: 5435,
  NODE1_REST_PORT: 8008,
  NODE2_REST_PORT: 8009,
  NODE3_REST_PORT: 8010,
};

describe('deploy/ha/cluster.sh writes a cluster.env the guide can source', () => {
  // A folder name with a space and a quote: each value must still be one word to the shell.
  const root = mkdtempSync(join(tmpdir(), "plant-store ha-'guide-"));
  after(() => rmSync(root, { recursive: true, force: true }));

  it('sourcing it sets each variable, PATRONICTL to the whole command', async () => {
    const dir = join(root, 'cluster');
    mkdirSync(dir);
    await writeClusterEnv(dir, PORTS);
    const env = await sourceClusterEnv(join(dir, 'cluster.env'));
    assert.equal(env.PATRONICTL, `patronictl -c ${dir}/node1/patroni.yml`);
    assert.equal(env.PLANTS_HA_URL, 'postgres://postgres@127.0.0.1:5000/postgres');
    assert.equal(env.ETCD_URL, 'http://127.0.0.1:2379');
    assert.equal(env.NODE3_REST_PORT, '8010');
  });

  it("the guide's `. cluster.env` and `$PATRONICTL list` run patronictl with the cluster's file", async () => {
    // No space here: the guide expands $PATRONICTL unquoted, so its folder is split at spaces.
    const dir = mkdtempSync(join(tmpdir(), 'plant-store-ha-guide-'));
    try {
      await writeClusterEnv(dir, PORTS);
      const bin = join(dir, 'bin');
      mkdirSync(bin);
      writeFileSync(join(bin, 'patronictl'), '#!/bin/sh\nfor a in "$@"; do printf "%s\\n" "$a"; done\n');
      chmodSync(join(bin, 'patronictl'), 0o755);
      const { stdout, stderr } = await runGuideEnvLines(dir, bin);
      assert.equal(stderr, '');
      assert.deepEqual(stdout.trim().split('\n'), ['-c', `${dir}/node1/patroni.yml`, 'list']);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
