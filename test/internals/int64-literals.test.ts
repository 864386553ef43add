// The one parser of integer literals, used for request bodies and dumps: exact
// bigints for int64 literals, and no BigInt of a literal too long to be one.
import assert from 'node:assert/strict';
import { DUMP_FORMAT, DUMP_VERSION, readDump } from '../../src/backup/dump.js';
import { parseInt64Text, parseJsonNumber } from '../../src/schemas/int64.js';
import type { Store } from '../../src/store/store.js';
import { before, describe, it } from '../helpers/requirements.js';
import { describeOnStore } from '../helpers/stores.js';

describe('integer literals', { timeout: 20_000 }, () => {
  it('reads int64 literals exactly as bigint, and other numbers as numbers', () => {
    assert.equal(parseJsonNumber('9007199254740993'), 9007199254740993n);
    assert.equal(parseJsonNumber('-9223372036854775808'), -(2n ** 63n));
    assert.equal(parseJsonNumber('0'), 0n);
    assert.equal(parseJsonNumber('1.5'), 1.5);
    assert.equal(parseJsonNumber('1e3'), 1000);
    assert.equal(parseInt64Text('9223372036854775807'), 2n ** 63n - 1n);
    assert.equal(parseInt64Text('007'), undefined);
  });

  it('does not convert a literal longer than any int64 (the length guard)', () => {
    assert.equal(parseJsonNumber('9'.repeat(21)), Infinity);
    assert.equal(parseJsonNumber(`-${'9'.repeat(20)}`), -Infinity);
    assert.equal(parseJsonNumber('1'.repeat(1_000_000)), Infinity);
    assert.equal(parseInt64Text('1'.repeat(1_000_000)), undefined);
  });
});

describeOnStore('sqlite', 'integer literals in a dump', (fx) => {
  let store: Store;
  before(async () => {
    store = await fx.open();
  });

  async function* lines(...texts: string[]) {
    yield JSON.stringify({ type: DUMP_FORMAT, version: DUMP_VERSION });
    yield* texts;
  }

  it(
    'keeps a large id exact and refuses a megabyte of digits as an id that is not an int64',
    { timeout: 20_000 },
    async () => {
      const big = '{"type":"plant","owner":"alice","id":9007199254740993,"name":"fern"}';
      assert.equal((await readDump(store, lines(big))).plants, 1);
      const ids: bigint[] = [];
      for await (const { plant } of store.transfer.plants()) ids.push(plant.id);
      assert.deepEqual(ids, [9007199254740993n]);
      const huge = `{"type":"plant","owner":"alice","id":${'9'.repeat(1_000_000)},"name":"moss"}`;
      await assert.rejects(readDump(store, lines(huge)), {
        name: 'DumpError',
        message: 'line 2: id must be an integer between -9223372036854775808 and 9223372036854775807',
      });
    },
  );
});
