// Owners' change versions on a real SQLite file: a write through this
// process moves only its owner's version (a create only its `appended`); a
// commit by another connection moves every owner's, seen from the next turn
// of the event loop, including while the writer thread's own commits change
// what SQLite reports.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it, type TestContext } from 'node:test';
import { setImmediate as nextTurn } from 'node:timers/promises';
import type Database from 'better-sqlite3';
import { ChangeEpoch, type ChangeVersion } from '../../src/store/sqlite/change-epoch.js';
import { openSqlite } from '../../src/store/sqlite/db-connect.sqlite.js';
import { migrateSqlite } from '../../src/store/sqlite/store.sqlite.js';
import { fileIdentity } from '../../src/store/sqlite/store-file.js';
import { WriterThread } from '../../src/store/sqlite/writer-thread.js';

describe('SQLite change epoch', () => {
  let dir: string;
  let path: string;
  let own: Database.Database;
  let other: Database.Database;
  let n = 0;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'plant-store-epoch-'));
    path = join(dir, 'epoch.db');
    await migrateSqlite({ path, durability: 'normal' });
    own = openSqlite({ path, durability: 'normal' });
    other = openSqlite({ path, durability: 'normal' });
  });
  after(() => {
    other.close();
    own.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const insert = (db: Database.Database, owner: string) =>
    db.prepare("INSERT INTO plants (owner, id, name) VALUES (?, ?, 'p')").run(owner, ++n);
  const create = (owner: string) => ({ kind: 'create' as const, owner, id: BigInt(++n), name: 'p', tag: null });
  const remove = (owner: string, id: bigint) => ({ kind: 'delete' as const, owner, id });

  /** A copy of the owner's version now (the epoch updates its objects in place). */
  const now = (epoch: ChangeEpoch, owner: string): ChangeVersion | undefined => {
    const version = epoch.current(owner);
    return version && { ...version };
  };

  /** The owner's version once the store can tell (a probe of the writer thread may be under way). */
  async function settled(epoch: ChangeEpoch, owner: string): Promise<ChangeVersion> {
    // The answer comes from another thread: on a busy machine that can take
    // many turns of this event loop, so the wait is bounded by time, not turns.
    const deadline = performance.now() + 5000;
    while (performance.now() < deadline) {
      const version = now(epoch, owner);
      if (version !== undefined) return version;
      await nextTurn();
    }
    assert.fail(`no version for ${owner} within 5 s`);
  }

  /** An epoch on the main connection, with a writer thread that has committed once. */
  async function withWriter(t: TestContext): Promise<{ epoch: ChangeEpoch; writer: WriterThread }> {
    const epoch = new ChangeEpoch(own);
    const writer = new WriterThread({ path, durability: 'normal', opened: fileIdentity(path) }, epoch);
    t.after(() => writer.close());
    // The thread's first report cannot know what happened before it started.
    await writer.run(create('warm-up'));
    return { epoch, writer };
  }

  it('stays the same while nothing is written', async () => {
    const epoch = new ChangeEpoch(own);
    const start = now(epoch, 'a');
    assert.deepEqual(now(epoch, 'a'), start);
    await nextTurn();
    assert.deepEqual(now(epoch, 'a'), start);
    own.prepare('SELECT count(*) FROM plants').get();
    other.prepare('SELECT count(*) FROM plants').get();
    await nextTurn();
    assert.deepEqual(now(epoch, 'a'), start);
  });

  it('bump() moves only that owner, at once', () => {
    const epoch = new ChangeEpoch(own);
    const [a, b] = [now(epoch, 'a'), now(epoch, 'b')];
    // data_version does not change for commits made through the same
    // connection, which is why such a write bumps its owner itself.
    insert(own, 'a');
    epoch.bump('a');
    assert.notDeepEqual(now(epoch, 'a'), a);
    assert.deepEqual(now(epoch, 'b'), b);
  });

  it("moves every owner on the next turn after another connection's commit, once, and not for a rollback", async () => {
    const epoch = new ChangeEpoch(own);
    const [a, b] = [now(epoch, 'a'), now(epoch, 'b')];
    insert(other, 'a');
    // data_version is read at most once per turn: this turn still has the old value.
    assert.deepEqual(now(epoch, 'b'), b);
    await nextTurn();
    const [a2, b2] = [now(epoch, 'a'), now(epoch, 'b')];
    assert.notDeepEqual(a2, a);
    assert.notDeepEqual(b2, b, 'another connection may have written any owner');
    await nextTurn();
    assert.deepEqual(now(epoch, 'b'), b2, 'moves once per change');
    other.exec('BEGIN IMMEDIATE');
    insert(other, 'b');
    other.exec('ROLLBACK');
    await nextTurn();
    assert.deepEqual(now(epoch, 'b'), b2, 'a rolled-back transaction changes nothing');
  });

  it("a write through the writer thread moves only its owner; another connection's commit meanwhile moves all", async (t) => {
    const { epoch, writer } = await withWriter(t);
    const b = await settled(epoch, 'b');
    const a = await settled(epoch, 'a');

    await writer.run(create('a'));
    assert.notDeepEqual(await settled(epoch, 'a'), a, 'the owner written');
    assert.deepEqual(await settled(epoch, 'b'), b, 'another owner keeps its version');

    // The writer thread commits (changing what SQLite reports to this
    // connection) while another connection commits too.
    const written = writer.run(create('a'));
    insert(other, 'c');
    await written;
    assert.notDeepEqual(await settled(epoch, 'b'), b, 'a commit by another connection moves every owner');
  });

  it('gives no version while it cannot tell its own commits from others, and one again after the answer', async (t) => {
    const { epoch, writer } = await withWriter(t);
    const b = await settled(epoch, 'b');
    // A batch in flight, and meanwhile another connection's commit: the
    // thread, busy with the batch, is asked without waiting for its answer.
    const written = writer.run(create('a'));
    await nextTurn();
    assert.equal(writer.busy, true, 'the batch was handed to the thread');
    insert(other, 'c');
    assert.deepEqual(now(epoch, 'b'), undefined);
    await written;
    assert.notDeepEqual(await settled(epoch, 'b'), b, 'the answer: another connection committed');
  });

  it('after a commit of its own, asks the writer thread without waiting, and keeps other owners once it answers', async (t) => {
    const { epoch, writer } = await withWriter(t);
    const b = await settled(epoch, 'b');
    for (let i = 0; i < 5; i++) {
      await writer.run(create('a'));
      // The answer is a message of another thread: this turn goes on
      // without it, and nothing is reused until it has come.
      assert.equal(writer.awaitingForeign, true, 'the thread was asked');
      assert.equal(now(epoch, 'b'), undefined, 'no version before the answer');
      assert.deepEqual(await settled(epoch, 'b'), b, "a commit of its own leaves other owners' versions");
      assert.equal(writer.awaitingForeign, false);
    }
  });

  it("sees another connection's commit that came after commits of its own nobody listed in between", async (t) => {
    const { epoch, writer } = await withWriter(t);
    const b = await settled(epoch, 'b');
    // Commits with no list asked for in between: data_version is not read after them.
    for (let i = 0; i < 3; i++) await writer.run(create('a'));
    insert(other, 'c');
    await nextTurn();
    assert.notDeepEqual(await settled(epoch, 'b'), b, 'a commit by another connection moves every owner');
    const b2 = await settled(epoch, 'b');
    await writer.run(create('a'));
    await nextTurn();
    assert.deepEqual(await settled(epoch, 'b'), b2, 'and a commit of its own moves only its owner');
  });

  it('a create moves only appended; a delete is remembered with its position', async (t) => {
    const { epoch, writer } = await withWriter(t);
    const before = await settled(epoch, 'grows');

    const added = create('grows');
    await writer.run(added);
    const afterCreate = await settled(epoch, 'grows');
    assert.equal(afterCreate.changed, before.changed, 'a create appends: pages with a next page stay good');
    assert.notEqual(afterCreate.appended, before.appended, 'the last page may have grown');

    const seq = await writer.run(remove('grows', added.id));
    assert.equal(typeof seq, 'bigint');
    const afterDelete = await settled(epoch, 'grows');
    assert.equal(afterDelete.changed, afterCreate.changed, 'a delete changes only the pages that held the plant');
    assert.ok(afterDelete.appended > afterCreate.appended);
    assert.deepEqual(afterDelete.deletions.at(-1), { at: afterDelete.appended, position: seq });
    for (let i = 0; i < 20; i++) epoch.deleted('grows', BigInt(i));
    assert.ok(now(epoch, 'grows')!.changed > afterDelete.changed, 'deletions past the last few change any page');
    assert.equal(now(epoch, 'grows')!.deletions.length, 16);

    epoch.bump('grows');
    assert.notEqual(now(epoch, 'grows')!.changed, afterDelete.changed, 'bump() (an import) changes any page');
  });
});
