// The word between processes on one SQLite file (two signals on one file
// stand for two processes): it reaches a listener, and only one; nothing is
// written while no other listens; a listener that stops and comes back is
// told again; a listener's folder left by a process gone is removed.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import { signalFolder, SqliteEventSignal } from '../../src/store/sqlite/event-signal.sqlite.js';

const dir = mkdtempSync(join(tmpdir(), 'plant-signal-'));
after(() => rmSync(dir, { recursive: true, force: true }));

/** Resolves with how many times `count` went up within `ms`. */
async function heard(count: () => number, ms = 500): Promise<number> {
  const before = count();
  const deadline = performance.now() + ms;
  while (count() === before && performance.now() < deadline) await delay(2);
  return count() - before;
}

describe('SQLite event signal', () => {
  it('tells a listening process, never the writer itself, and writes nothing while no other listens', async () => {
    const db = join(dir, 'a.db');
    const [writer, reader] = [new SqliteEventSignal(db), new SqliteEventSignal(db)];
    try {
      writer.start();
      let own = 0;
      let told = 0;
      const deafWriter = writer.listen(() => own++);
      writer.announce();
      await delay(50);
      // The writer's own folder is all there is: no word file of another to write into.
      assert.equal(readdirSync(signalFolder(db)).length, 1);

      const deaf = reader.listen(() => told++);
      await delay(20); // the writer sees the reader's folder come
      writer.announce();
      writer.announce();
      assert.ok((await heard(() => told)) >= 1, 'the reader was told');
      assert.equal(own, 0, 'the writer does not hear itself');

      deaf();
      await delay(20);
      const folders = readdirSync(signalFolder(db));
      assert.equal(folders.length, 1, `only the writer listens: ${folders.join(', ')}`);
      const again = reader.listen(() => told++);
      await delay(20);
      writer.announce();
      assert.ok((await heard(() => told)) >= 1, 'told again after listening again');
      again();
      deafWriter();
    } finally {
      await writer.close();
      await reader.close();
    }
    assert.deepEqual(readdirSync(signalFolder(db)), [], 'nothing left once both closed');
  });

  it("removes a gone process's listener folder of this host when it starts to listen", async () => {
    const db = join(dir, 'b.db');
    const folder = signalFolder(db);
    mkdirSync(folder, { recursive: true });
    // A pid above Linux's largest possible runs nowhere.
    const gone = `${hostname().replace(/[^A-Za-z0-9.]/g, '_')}-4194305-0123abcd`;
    const elsewhere = 'other.host-4194305-0123abcd';
    for (const name of [gone, elsewhere]) {
      mkdirSync(join(folder, name));
      writeFileSync(join(folder, name, 'word'), '');
    }
    const signal = new SqliteEventSignal(db);
    try {
      signal.listen(() => {});
      const left = readdirSync(folder);
      assert.ok(!left.includes(gone), 'the gone process of this host is removed');
      assert.ok(left.includes(elsewhere), "another host's listener is kept: its processes cannot be seen from here");
    } finally {
      await signal.close();
    }
  });
});
