// deploy/pgbouncer/: the PgBouncer configuration the PostgreSQL guide gives
// for one plain PostgreSQL server, run as shipped (only its addresses, paths,
// database and password filled in, as the file asks): a wrong password is
// refused, and with the right one Plant Store migrates, issues a token and
// serves through it.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { after, before, it, needs, requirement } from '../helpers/requirements.js';
import { PgBouncer, pgbouncerProbe } from '../helpers/pgbouncer.js';
import { runCliInProcess } from '../helpers/cli.js';
import { serveInProcess } from '../helpers/serve-in-process.js';
import { httpRequest, serveArgs, stopGracefully } from '../helpers/server.js';
import { PG_URL, describeOnStore } from '../helpers/stores.js';

const DEPLOY = fileURLToPath(new URL('../../../deploy/pgbouncer/', import.meta.url));
const PASSWORD = 'correct-horse-battery-staple';

/** `text` with `from` replaced by `to`, failing when the shipped file no longer holds `from`. */
function fill(text: string, from: string | RegExp, to: string): string {
  assert.match(text, typeof from === 'string' ? new RegExp(from.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')) : from);
  return text.replace(from, to);
}

needs(await requirement('pgbouncer', pgbouncerProbe), () =>
  describeOnStore('postgres', 'deploy/pgbouncer/ in front of one PostgreSQL', (fx) => {
    let bouncer: PgBouncer;
    const user = decodeURIComponent(new URL(PG_URL).username || 'postgres');
    const url = (password: string) => `postgres://${user}:${password}@127.0.0.1:${bouncer.port}/plants`;

    before(async () => {
      const upstream = new URL(PG_URL);
      const database = new URL(fx.db).pathname.slice(1);
      bouncer = await PgBouncer.startWith((dir, port) => {
        let ini = readFileSync(join(DEPLOY, 'pgbouncer.ini'), 'utf8');
        ini = fill(
          ini,
          'plants = host=127.0.0.1 port=5432 dbname=plants',
          `plants = host=${upstream.hostname} port=${upstream.port || 5432} dbname=${database}`,
        );
        ini = fill(ini, 'listen_port = 6432', `listen_port = ${port}`);
        ini = fill(ini, 'auth_file = /etc/pgbouncer/userlist.txt', `auth_file = ${join(dir, 'userlist.txt')}`);
        // Its log beside it, and no Unix socket in /tmp.
        ini += `logfile = ${join(dir, 'pgbouncer.log')}\nunix_socket_dir =\n`;
        const userlist = fill(
          readFileSync(join(DEPLOY, 'userlist.txt'), 'utf8'),
          '"plants" "CHANGE-ME"',
          `"${user}" "${PASSWORD}"`,
        );
        return { ini, userlist };
      });
    });
    after(() => bouncer?.destroy());

    it('refuses a wrong password (scram-sha-256 against userlist.txt)', async () => {
      const client = new pg.Client({ connectionString: url('wrong'), connectionTimeoutMillis: 5000 });
      await assert.rejects(client.connect(), /password authentication failed|SASL|auth/i);
      await client.end().catch(() => {});
    });

    it('Plant Store migrates, issues a token and serves through it with --pg-pooler transaction', async () => {
      const db = url(PASSWORD);
      const migrated = await runCliInProcess(['migrate', '--db', db, '--pg-pooler', 'transaction']);
      assert.equal(migrated.code, 0, migrated.stderr);
      const created = await runCliInProcess([
        'token',
        'create',
        '--owner',
        'bounced',
        '--db',
        db,
        '--pg-pooler',
        'transaction',
      ]);
      assert.equal(created.code, 0, created.stderr);
      const token = created.stdout.trim();
      const server = await serveInProcess(serveArgs(db, '--pg-pooler', 'transaction', '--pg-pool-size', '4'));
      try {
        const res = await httpRequest(`${server.url}/plants`, { method: 'POST', token, json: { id: 1, name: 'Fern' } });
        assert.equal(res.status, 200, res.body);
        const list = await httpRequest(`${server.url}/plants`, { token });
        assert.deepEqual(JSON.parse(list.body), [{ name: 'Fern' }]);
      } finally {
        await stopGracefully(server);
      }
    });
  }),
);
