// A real Prometheus server scrapes the admin port (--admin-port): the target
// is up and our series are stored.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../helpers/ports.js';
import { after, commandProbe, it, needs, requirement } from '../helpers/requirements.js';
import { serveInProcess } from '../helpers/serve-in-process.js';
import {
  delay,
  httpRequest,
  serveArgs,
  stopGracefully,
  tokensIn,
  useProcessCleanup,
  adminUrlOf,
} from '../helpers/server.js';
import { describeOnStore } from '../helpers/stores.js';

const prometheusServer = await requirement('prometheus (Debian package prometheus)', commandProbe('prometheus'));

needs(prometheusServer, () =>
  describeOnStore('sqlite', 'a real Prometheus server', (fx) => {
    useProcessCleanup();
    let prometheus: ChildProcess | undefined;
    let dir = '';
    after(async () => {
      if (prometheus && prometheus.exitCode === null) {
        const exited = new Promise((resolve) => prometheus!.once('exit', resolve));
        prometheus.kill('SIGKILL');
        await exited;
      }
      if (dir) rmSync(dir, { recursive: true, force: true });
    });

    it('scrapes the admin port: up == 1 and our series are stored', async () => {
      const server = await serveInProcess(serveArgs(fx.db, '--admin-port', '0'));
      const admin = new URL(await adminUrlOf(server));
      const token = tokensIn(server.stderr)[0]!;
      assert.equal((await httpRequest(`${server.url}/plants`, { token })).status, 200);

      dir = mkdtempSync(join(tmpdir(), 'plant-store-prometheus-'));
      writeFileSync(
        join(dir, 'prometheus.yml'),
        [
          'global:',
          '  scrape_interval: 1s',
          'scrape_configs:',
          '  - job_name: plant-store',
          '    static_configs:',
          `      - targets: ['${admin.host}']`,
        ].join('\n'),
      );
      const port = await freePort();
      prometheus = spawn(
        'prometheus',
        [
          `--config.file=${join(dir, 'prometheus.yml')}`,
          `--storage.tsdb.path=${join(dir, 'data')}`,
          `--web.listen-address=127.0.0.1:${port}`,
        ],
        { stdio: ['ignore', 'ignore', 'pipe'] },
      );
      let log = '';
      prometheus.stderr!.setEncoding('utf8').on('data', (d: string) => (log += d));

      const query = async (q: string) => {
        const res = await httpRequest(`http://127.0.0.1:${port}/api/v1/query?query=${encodeURIComponent(q)}`);
        if (res.status !== 200) return [];
        return (
          JSON.parse(res.body) as { data: { result: { metric: Record<string, string>; value: [number, string] }[] } }
        ).data.result;
      };
      const deadline = Date.now() + 30_000;
      let up: Awaited<ReturnType<typeof query>> = [];
      let series: typeof up = [];
      while (Date.now() < deadline) {
        up = await query('up{job="plant-store"}').catch(() => []);
        series = await query('plant_store_http_request_duration_seconds_count{route="/plants"}').catch(() => []);
        if (up[0]?.value[1] === '1' && series.length > 0) break;
        await delay(500);
      }
      assert.equal(up[0]?.value[1], '1', `Prometheus never saw the target up:\n${log.slice(-3000)}`);
      assert.ok(
        series.some((s) => s.metric.method === 'GET' && s.metric.status_code === '200' && Number(s.value[1]) >= 1),
        JSON.stringify(series),
      );
      await stopGracefully(server);
    });
  }),
);
