// The PostgreSQL batcher, with batches that end when the test says: items of
// one key (an owner) never run in two batches at once, and those that waited
// leave together as one batch; other keys are not held up.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { setImmediate as turn } from 'node:timers/promises';
import { Batcher } from '../../src/store/postgres/batcher.postgres.js';

type Item = { owner: string; n: number };

/** A batcher whose running batches are recorded and end only when `finish(i)` is called. */
function recording(maxInFlight: number) {
  const started: Item[][] = [];
  const endings: (() => void)[] = [];
  const batcher = new Batcher<Item>(
    (batch) => {
      started.push(batch);
      return new Promise<void>((resolve) => endings.push(resolve));
    },
    { maxItems: 100, maxInFlight, key: (item) => item.owner },
  );
  const finish = async (i: number) => {
    endings[i]!();
    await turn();
    await turn();
  };
  return { batcher, started, finish };
}

const names = (batch: Item[] | undefined) => batch?.map((i) => `${i.owner}${i.n}`).join(' ');

describe('batcher keys', () => {
  it('holds an owner’s items while its batch runs, then sends them as one batch', async () => {
    const { batcher, started, finish } = recording(4);
    batcher.add({ owner: 'a', n: 1 });
    await turn();
    assert.equal(names(started[0]), 'a1');
    for (let n = 2; n <= 5; n++) batcher.add({ owner: 'a', n });
    await turn();
    await turn();
    assert.equal(started.length, 1, 'no second batch for a while its first runs, though three more could run');
    await finish(0);
    assert.equal(names(started[1]), 'a2 a3 a4 a5');
  });

  it('runs other owners beside it, in arrival order, and keeps the waiting ones in order', async () => {
    const { batcher, started, finish } = recording(4);
    batcher.add({ owner: 'a', n: 1 });
    await turn();
    batcher.add({ owner: 'a', n: 2 });
    batcher.add({ owner: 'b', n: 1 });
    batcher.add({ owner: 'a', n: 3 });
    batcher.add({ owner: 'c', n: 1 });
    await turn();
    assert.equal(names(started[1]), 'b1 c1');
    await finish(1);
    assert.equal(started.length, 2, 'b and c ended; a still runs, so a2 and a3 wait');
    await finish(0);
    assert.equal(names(started[2]), 'a2 a3');
  });

  it('still bounds the batches in flight', async () => {
    const { batcher, started, finish } = recording(2);
    for (const owner of ['a', 'b']) batcher.add({ owner, n: 1 });
    await turn();
    assert.equal(started.length, 1, 'both owners in one batch');
    batcher.add({ owner: 'c', n: 1 });
    await turn();
    batcher.add({ owner: 'd', n: 1 });
    await turn();
    assert.deepEqual(started.map(names), ['a1 b1', 'c1'], 'd waits: two batches run');
    await finish(1);
    assert.equal(names(started[2]), 'd1');
  });
});
