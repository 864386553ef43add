// The list commands' printers (cli/rows.ts): a table's columns line up over
// every row however many there are, and JSON Lines holds one row per line.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Writable } from 'node:stream';
import { printJsonLines, printTable } from '../../src/cli/rows.js';

class Capture extends Writable {
  text = '';
  writes = 0;
  override _write(chunk: Buffer | string, _encoding: BufferEncoding, callback: () => void): void {
    this.text += chunk.toString();
    this.writes++;
    callback();
  }
}

const header = { id: 'ID', owner: 'OWNER', note: 'NOTE' };

describe('printTable', () => {
  it('aligns the columns to the widest value, header included', () => {
    const out = new Capture();
    printTable(out, header, [
      { id: '1', owner: 'a-much-longer-owner', note: 'x' },
      { id: '22', owner: 'b', note: '' },
    ]);
    assert.equal(out.text, ['ID  OWNER                NOTE', '1   a-much-longer-owner  x', '22  b', ''].join('\n'));
  });

  it('prints 150,000 rows, the widest one last', () => {
    const rows = Array.from({ length: 150_000 }, (_, i) => ({ id: String(i), owner: `owner-${i % 7}`, note: '-' }));
    rows.push({ id: 'last', owner: 'the-widest-owner-of-all', note: '-' });
    const out = new Capture();
    printTable(out, header, rows);
    const lines = out.text.trimEnd().split('\n');
    assert.equal(lines.length, rows.length + 1);
    assert.equal(lines[0], 'ID      OWNER                    NOTE');
    assert.equal(lines[1], '0       owner-0                  -');
    assert.equal(lines.at(-1), 'last    the-widest-owner-of-all  -');
    assert.ok(out.writes < 1000, `${out.writes} writes for ${rows.length} rows`);
  });
});

describe('printJsonLines', () => {
  it('prints one JSON object per row and line', () => {
    const rows = Array.from({ length: 20_000 }, (_, i) => ({ id: i, scopes: ['plants:read'], expires: null }));
    const out = new Capture();
    printJsonLines(out, rows);
    const lines = out.text.split('\n');
    assert.equal(lines.pop(), '');
    assert.deepEqual(
      lines.map((l) => JSON.parse(l) as unknown),
      rows,
    );
  });
});
