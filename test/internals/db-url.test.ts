// Where a PostgreSQL URL points, as every message names it (the start-up log,
// the CLI's connection errors, the store's schema check), agrees with where
// pg connects.
import assert from 'node:assert/strict';
import pg from 'pg';
import { storeLocation } from '../../src/cli/store-location.js';
import { postgresTarget, withoutPassword } from '../../src/db-url.js';
import { describe, it } from '../helpers/requirements.js';

// Each names its user, so that pg's fallback to the login name plays no part.
const URLS = [
  'postgres:///?host=/var/run/postgresql&user=bob',
  'postgres://alice@/plants?host=/tmp',
  'postgres://alice:secret@db.internal:6432/plants',
  'postgresql://alice@db.internal/plants?user=bob',
  'postgres://alice@db.internal/plants?port=6000',
  'postgres://alice@%2Fvar%2Frun%2Fpostgresql/plants',
  'postgres://alice@[::1]:5433/plants',
  'postgres://alice@db.internal',
  'postgres://alice@db.internal/my%20plants',
  'postgres://alice:p%40ss@localhost/plants?sslmode=disable&application_name=x',
];

describe('postgresTarget', { timeout: 10_000 }, () => {
  it('names the host, port, database and user pg connects to', () => {
    const saved = { ...process.env };
    // pg falls back to these where the URL is silent; postgresTarget does not read them.
    for (const name of ['PGHOST', 'PGPORT', 'PGUSER', 'PGDATABASE']) delete process.env[name];
    try {
      for (const url of URLS) {
        const client = new pg.Client(url);
        const { host, port, database, user } = postgresTarget(url);
        assert.deepEqual(
          { host, port, database, user },
          { host: client.host, port: client.port, database: client.database, user: client.user },
          url,
        );
      }
    } finally {
      Object.assign(process.env, saved);
    }
  });

  it('reads query parameters and socket folders as pg does', () => {
    assert.deepEqual(postgresTarget('postgres:///?host=/var/run/postgresql&user=bob'), {
      host: '/var/run/postgresql',
      port: 5432,
      database: 'bob',
      user: 'bob',
    });
    assert.deepEqual(postgresTarget('postgres://%2Fvar%2Frun%2Fpostgresql/plants'), {
      host: '/var/run/postgresql',
      port: 5432,
      database: 'plants',
      user: undefined,
    });
    assert.equal(postgresTarget('postgres://alice@db/plants?user=bob').user, 'bob');
    assert.equal(postgresTarget('postgres://db').database, undefined);
  });

  it('does not read the certificate and key files the URL names', () => {
    const target = postgresTarget(
      'postgres://alice@db/plants?sslmode=verify-full&sslcert=/nowhere/c.pem&sslkey=/nowhere/k.pem',
    );
    assert.deepEqual(target, { host: 'db', port: 5432, database: 'plants', user: 'alice' });
  });
});

describe('storeLocation', { timeout: 10_000 }, () => {
  it('names the PostgreSQL database postgresTarget names, without the password', () => {
    for (const url of URLS) {
      const { host, port, database, user } = postgresTarget(url);
      const location = storeLocation(url);
      assert.deepEqual(location, { store: 'postgres', host, port, database, user }, url);
      assert.doesNotMatch(JSON.stringify(location), /secret|p@ss/);
    }
    assert.deepEqual(storeLocation('postgres://db'), {
      store: 'postgres',
      host: 'db',
      port: 5432,
      database: '(the user name)',
      user: undefined,
    });
  });
});

describe('withoutPassword', { timeout: 10_000 }, () => {
  it('hides the user and password of a URL that does not parse', () => {
    assert.equal(withoutPassword('postgres://alice:s3cr@t@db:5432/plants'), 'postgres://***@db:5432/plants');
    assert.equal(withoutPassword('mysql://alice:secret@db/plants?x=<'), 'mysql://***@…');
    assert.equal(withoutPassword('postgres:/alice:secret/plants'), 'postgres:/***/plants');
    assert.equal(withoutPassword('./data/plants.db'), './data/plants.db');
  });
});
