// List cursors are opaque, authenticated and bound to their owner on both
// stores, and work on every instance sharing the database; the token tools
// never create the schema in a database they are pointed at.
import assert from 'node:assert/strict';
import Database from 'better-sqlite3';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../src/app/app.js';
import { useApp } from '../helpers/app.js';
import { createRaw, expectError, getPage, listAll, newOwner } from '../helpers/plants-http.js';
import { query } from '../helpers/pg.js';
import { runCliInProcess as runCli } from '../helpers/cli.js';
import { describeEachStore } from '../helpers/stores.js';
import { before, it } from '../helpers/requirements.js';

const cursorOf = (next: string) => decodeURIComponent(/cursor=([^&]+)/.exec(next)![1]!);

describeEachStore('list cursors', (fx) => {
  const h = useApp(fx);
  const owner = { name: '', token: '' };
  const ID = 7_340_032_987_654_321n;

  before(async () => {
    owner.name = newOwner('cur');
    owner.token = await h.token(owner.name);
    for (const id of [ID, ID + 1n, ID + 2n]) {
      assert.equal((await createRaw(h, owner.token, `{"id":${id},"name":"p${id}"}`)).statusCode, 200);
    }
  });

  async function firstCursor(token = owner.token): Promise<string> {
    const page = await getPage(h, token, '/plants?limit=1');
    assert.ok(page.next, 'a next link');
    return cursorOf(page.next);
  }

  it('reveal neither the id nor the time, and keep one length', async () => {
    const cursor = await firstCursor();
    const bytes = Buffer.from(cursor, 'base64url');
    for (const form of [bytes.toString('latin1'), bytes.toString('hex')]) {
      assert.ok(!form.includes(String(ID)), `${cursor} reveals the id`);
    }
    // The time as text, or as seconds in binary (the top three bytes: they change every 2^8 s). Four hex
    // digits such as "2026" turn up in random bytes one time in a thousand, so hex is not searched for it.
    assert.ok(!bytes.toString('latin1').includes(new Date().getUTCFullYear().toString()), `${cursor} reveals the time`);
    const seconds = Buffer.alloc(4);
    seconds.writeUInt32BE(Math.floor(Date.now() / 1000));
    assert.ok(!bytes.includes(seconds.subarray(0, 3)), `${cursor} holds the time in binary`);
    const idBytes = Buffer.alloc(8);
    idBytes.writeBigInt64BE(ID);
    assert.ok(!bytes.includes(idBytes), `${cursor} holds the id in binary`);
    const second = await getPage(h, owner.token, `/plants?limit=1&cursor=${encodeURIComponent(cursor)}`);
    assert.equal(cursorOf(second.next!).length, cursor.length);
  });

  it('refuse a cursor with any bit changed', async () => {
    const cursor = await firstCursor();
    const bytes = Buffer.from(cursor, 'base64url');
    for (const i of [0, Math.floor(bytes.length / 2), bytes.length - 1]) {
      const forged = Buffer.from(bytes);
      forged[i]! ^= 1;
      const res = await h.request({
        method: 'GET',
        url: `/plants?limit=1&cursor=${forged.toString('base64url')}`,
        token: owner.token,
      });
      expectError(res, 400, /cursor/);
    }
  });

  it('refuse a cursor of another owner', async () => {
    const cursor = await firstCursor();
    const other = await h.token(newOwner('cur'));
    await createRaw(h, other, '{"id":1,"name":"x"}');
    const res = await h.request({ method: 'GET', url: `/plants?cursor=${cursor}`, token: other });
    expectError(res, 400, /cursor/);
  });

  it('refuse a cursor forged in the old readable format', async () => {
    const old = Buffer.from(`t2026-01-01T00:00:00.000000i${ID}`).toString('base64url');
    expectError(await h.request({ method: 'GET', url: `/plants?cursor=${old}`, token: owner.token }), 400, /cursor/);
  });

  it('work on another instance sharing the database', async () => {
    const store = await fx.open();
    let other: FastifyInstance | undefined;
    try {
      other = await buildApp(fx.config(), { store });
      const cursor = await firstCursor();
      const res = await other.inject({
        method: 'GET',
        url: `/plants?limit=5&cursor=${cursor}`,
        headers: { authorization: `Bearer ${owner.token}` },
      });
      assert.equal(res.statusCode, 200, res.body);
      assert.deepEqual(
        (JSON.parse(res.body) as { name: string }[]).map((p) => p.name),
        [`p${ID + 1n}`, `p${ID + 2n}`],
      );
    } finally {
      await other?.close();
    }
  });

  it('page through everything exactly once', async () => {
    const { plants, pageSizes } = await listAll(h, owner.token, '/plants?limit=1');
    assert.deepEqual(
      plants.map((p) => p.name),
      [ID, ID + 1n, ID + 2n].map((id) => `p${id}`),
    );
    assert.deepEqual(pageSizes, [1, 1, 1]);
  });
});

describeEachStore('commands that read a store, on a database without the schema', (fx) => {
  let db = '';
  before(async () => {
    if (fx.kind === 'sqlite') {
      // Somebody else's SQLite file.
      db = fx.db;
      const other = new Database(db);
      other.exec('CREATE TABLE notes (body TEXT)');
      other.close();
    } else {
      db = fx.db; // a fresh, empty database
    }
  });

  const tables = async (): Promise<string[]> => {
    if (fx.kind === 'sqlite') {
      const conn = new Database(db, { readonly: true });
      try {
        return conn
          .prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
          .pluck()
          .all() as string[];
      } finally {
        conn.close();
      }
    }
    const rows = await query<{ table_name: string }>(
      db,
      "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' ORDER BY table_name",
    );
    return rows.map((r) => r.table_name);
  };

  for (const args of [
    ['token', 'list'],
    ['token', 'revoke', 'tok_0000000000000000'],
    ['webhook', 'list'],
    ['webhook', 'remove', 'wh_0000000000000000'],
    ['export'],
  ]) {
    it(`${args.slice(0, 2).join(' ')} refuses it, naming it, and creates nothing`, async () => {
      const before = await tables();
      const r = await runCli([...args, '--db', db]);
      assert.equal(r.code, 1, `${r.stdout}${r.stderr}`);
      assert.match(r.stderr, /has no Plant Store schema/);
      assert.match(
        r.stderr,
        fx.kind === 'sqlite' ? /the SQLite file .*plants\.db/ : /the PostgreSQL database "plants_test_\w+" at /,
      );
      assert.doesNotMatch(r.stderr, /postgres:\/\/[^ ]*@/, 'no credentials in the message');
      assert.deepEqual(await tables(), before);
    });
  }

  it('token list works once the schema is there', async () => {
    const m = await runCli(['migrate', '--db', db]);
    assert.equal(m.code, 0, m.stderr);
    const r = await runCli(['token', 'list', '--db', db]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^ID\s+OWNER/);
  });
});
