// The batcher of both stores, with batches that end when the test says: items
// of one key (an owner) never run in two batches at once, and those that
// waited leave together as one batch; other keys are not held up. With
// `gather` (the SQLite writer thread's group commit) a small batch waits for
// company, up to a bound in items and in time; with `nextAtOnce` the next
// batch leaves as soon as one ends; a stopped runner's queue can be taken out.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { setImmediate as turn, setTimeout as sleep } from 'node:timers/promises';
import { Batcher, type BatcherOptions } from '../../src/store/batcher.js';

type Item = { owner: string; n: number };

/** A batcher whose running batches are recorded in `started` and end only when `endings[i]` is called. */
function recorded<T>(options: BatcherOptions<T>) {
  const started: T[][] = [];
  const endings: (() => void)[] = [];
  const batcher = new Batcher<T>((batch) => {
    started.push(batch);
    return new Promise<void>((resolve) => endings.push(resolve));
  }, options);
  return { batcher, started, endings };
}

/** Keyed by owner; `finish(i)` ends the i-th batch and lets the next start. */
function recording(maxInFlight: number) {
  const { batcher, started, endings } = recorded<Item>({ maxItems: 100, maxInFlight, key: (item) => item.owner });
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

describe('batcher gathering', () => {
  /** A writer-thread-like batcher: one batch at a time, gathering up to `items` or `ms`. */
  const gathering = (items: number, ms: number, nextAtOnce = false) =>
    recorded<number>({ maxItems: Infinity, maxInFlight: 1, gather: { items, ms }, nextAtOnce });

  it('holds a small batch for more items until it holds `items`', async () => {
    const { batcher, started } = gathering(3, 60_000);
    batcher.add(1);
    await turn();
    await turn();
    batcher.add(2);
    await turn();
    await turn();
    assert.equal(started.length, 0, 'two items wait for a third, with a minute to spare');
    batcher.add(3);
    await turn();
    await turn();
    assert.deepEqual(started, [[1, 2, 3]]);
  });

  it('sends a small batch once its oldest item has waited `ms`', async () => {
    const { batcher, started } = gathering(100, 20);
    const at = performance.now();
    batcher.add(1);
    while (started.length === 0) await turn();
    const waited = performance.now() - at;
    assert.ok(waited >= 20, `left after ${waited.toFixed(1)} ms, not before 20`);
    assert.ok(waited < 1000, `left after ${waited.toFixed(1)} ms`);
    assert.deepEqual(started, [[1]]);
  });

  it('gathers no more than the last batch held, so a slow stream of items is not held up', async () => {
    const { batcher, started, endings } = gathering(100, 40);
    batcher.add(1);
    while (started.length === 0) await turn();
    endings[0]!();
    await turn();
    batcher.add(2);
    await turn();
    await turn();
    assert.deepEqual(started, [[1], [2]], 'the last batch held one item: one is enough now');
  });

  it('with nextAtOnce, starts the next batch in the microtask after one ends', async () => {
    const { batcher, started, endings } = gathering(1, 0, true);
    batcher.add(1);
    while (started.length === 0) await turn();
    batcher.add(2);
    batcher.add(3);
    endings[0]!();
    await Promise.resolve();
    await Promise.resolve();
    assert.deepEqual(started, [[1], [2, 3]], 'no turn of the event loop in between');
  });

  it('without it, waits for the next turn', async () => {
    const { batcher, started, endings } = gathering(1, 0, false);
    batcher.add(1);
    while (started.length === 0) await turn();
    batcher.add(2);
    endings[0]!();
    await Promise.resolve();
    await Promise.resolve();
    assert.equal(started.length, 1);
    await turn();
    assert.deepEqual(started, [[1], [2]]);
  });

  it('hands out what is queued, and is idle once the running batch ends', async () => {
    const { batcher, started, endings } = gathering(1, 0);
    batcher.add(1);
    while (started.length === 0) await turn();
    batcher.add(2);
    batcher.add(3);
    let idle = false;
    void batcher.idle().then(() => (idle = true));
    assert.equal(batcher.pending, true);
    assert.deepEqual(batcher.takeQueued(), [2, 3]);
    await sleep(5);
    assert.equal(idle, false, 'a batch still runs');
    endings[0]!();
    await turn();
    assert.equal(idle, true);
    assert.equal(batcher.pending, false);
    assert.deepEqual(started, [[1]], 'the items taken out never ran');
    await batcher.idle();
  });
});
