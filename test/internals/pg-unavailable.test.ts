// Which PostgreSQL errors mean "this server cannot take the request now"
// (a 503 with Retry-After, and a connection that is not reused) and which are
// the statement's own fault: each error here is a real one, made by the test
// PostgreSQL or by pg itself, not a hand-built object.
import assert from 'node:assert/strict';
import pg from 'pg';
import { describe, it, needs, requirement, tcpProbe } from '../helpers/requirements.js';
import { freePort } from '../helpers/ports.js';
import { PG_URL } from '../helpers/stores.js';
import { assertWritable } from '../../src/store/postgres/db-connect.postgres.js';
import { ReadOnlyServerError, unavailableReason } from '../../src/store/postgres/errors.postgres.js';

const TIMEOUT = 15_000;
const { hostname, port } = new URL(PG_URL);
const pgMissing = await requirement(
  `PostgreSQL at ${hostname}:${port || 5432}`,
  tcpProbe(hostname, Number(port || 5432)),
);

async function connect(): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: PG_URL, connectionTimeoutMillis: 5000 });
  client.on('error', () => {});
  await client.connect();
  return client;
}

/** The error `sql` fails with on a fresh connection (which is then closed). */
async function errorOf(...sql: string[]): Promise<unknown> {
  const client = await connect();
  try {
    for (const statement of sql) await client.query(statement);
  } catch (error) {
    return error;
  } finally {
    await client.end().catch(() => {});
  }
  assert.fail(`${sql.join('; ')} did not fail`);
}

needs(pgMissing, () => {
  describe('PostgreSQL errors that mean the server cannot take the request now', () => {
    it(
      'a write on a read-only server (25006, a standby or a demoted primary) is read_only',
      { timeout: TIMEOUT },
      async () => {
        const error = await errorOf('BEGIN READ ONLY', 'CREATE TABLE plant_store_never (x int)');
        assert.equal((error as pg.DatabaseError).code, '25006');
        assert.equal(unavailableReason(error), 'read_only');
      },
    );

    it('a statement timeout (57014) is timeout', { timeout: TIMEOUT }, async () => {
      const error = await errorOf("SET statement_timeout = '20ms'", 'SELECT pg_sleep(5)');
      assert.equal((error as pg.DatabaseError).code, '57014');
      assert.equal(unavailableReason(error), 'timeout');
    });

    it(
      'a connection ended by the server (57P01, as in a shutdown or switchover) is shutdown',
      { timeout: TIMEOUT },
      async () => {
        const victim = await connect();
        const admin = await connect();
        try {
          const { rows } = await victim.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
          const failed = victim.query('SELECT pg_sleep(5)').then(
            () => assert.fail('the terminated session answered'),
            (e: unknown) => e,
          );
          await admin.query('SELECT pg_terminate_backend($1)', [rows[0]!.pid]);
          const error = await failed;
          assert.equal((error as pg.DatabaseError).code, '57P01');
          assert.equal(unavailableReason(error), 'shutdown');
        } finally {
          await admin.end();
          await victim.end().catch(() => {});
        }
      },
    );

    it('a refused connect and a pool connect timeout are connection and timeout', { timeout: TIMEOUT }, async () => {
      const closed = new pg.Client({ host: '127.0.0.1', port: await freePort(), connectionTimeoutMillis: 2000 });
      const refused = await closed.connect().then(
        () => assert.fail('connected to a closed port'),
        (e: unknown) => e,
      );
      assert.equal(unavailableReason(refused), 'connection');

      // A pool with its one connection checked out: the next checkout times out.
      const pool = new pg.Pool({ connectionString: PG_URL, max: 1, connectionTimeoutMillis: 50 });
      const held = await pool.connect();
      try {
        const waited = await pool.connect().then(
          () => assert.fail('a second checkout of a pool of one'),
          (e: unknown) => e,
        );
        assert.equal(unavailableReason(waited), 'timeout');
      } finally {
        held.release();
        await pool.end();
      }
    });

    it(
      "the statement's own faults are not: unique violation, syntax, division by zero",
      { timeout: TIMEOUT },
      async () => {
        for (const sql of [
          ['CREATE TEMP TABLE t (x int PRIMARY KEY)', 'INSERT INTO t VALUES (1), (1)'],
          ['SELEC 1'],
          ['SELECT 1 / 0'],
        ]) {
          const error = await errorOf(...sql);
          assert.ok(error instanceof pg.DatabaseError, String(error));
          assert.equal(unavailableReason(error), undefined, `${sql.join('; ')}: ${(error as Error).message}`);
        }
      },
    );

    it('a session that takes no writes is refused before use, as read_only', { timeout: TIMEOUT }, async () => {
      const client = await connect();
      try {
        await assertWritable(client);
        await client.query('SET default_transaction_read_only = on');
        const error = await assertWritable(client).then(
          () => assert.fail('a read-only session passed as writable'),
          (e: unknown) => e,
        );
        assert.ok(error instanceof ReadOnlyServerError);
        assert.equal(unavailableReason(error), 'read_only');
        // Found through a wrapper, as the store reports it.
        assert.equal(unavailableReason(new Error('store unavailable', { cause: error })), 'read_only');
      } finally {
        await client.end();
      }
    });
  });
});
