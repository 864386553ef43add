// plant-store import checks every record as the API would, caps the length
// of a line, and says whose tokens it took (or leaves them out).
import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable, Writable } from 'node:stream';
import { after, describe, it } from '../helpers/requirements.js';
import { runCliInProcess as runCli } from '../helpers/cli.js';
import { main } from '../../src/cli/main.js';

const LIMIT = { timeout: 60_000 };
const HEADER = '{"type":"plant-store-export","version":1}';
let hashes = 0;
const token = (id: string, owner: string) =>
  JSON.stringify({
    type: 'token',
    id,
    owner,
    scopes: ['plants:read'],
    createdAt: '2026-01-01T00:00:00.000Z',
    expiresAt: null,
    revokedAt: null,
    hash: Buffer.alloc(32, ++hashes).toString('base64'),
  });
const plant = (owner: string, id: string, name: string, tag?: string) =>
  `{"type":"plant","owner":${JSON.stringify(owner)},"id":${id},"name":${JSON.stringify(name)}${tag === undefined ? '' : `,"tag":${JSON.stringify(tag)}`}}`;

describe('plant-store import', () => {
  const dir = mkdtempSync(join(tmpdir(), 'plant-store-import-'));
  after(() => rmSync(dir, { recursive: true, force: true }));
  let n = 0;
  const newDb = () => join(dir, `store-${++n}.db`);
  const importText = (db: string, lines: string[], ...flags: string[]) =>
    runCli(['import', '--db', db, ...flags], {}, [HEADER, ...lines].join('\n') + '\n');

  it('refuses records the API would refuse, naming the line, and stores none of them', LIMIT, async () => {
    const bad: [string, RegExp][] = [
      [plant('', '1', 'fern'), /owner must be 1 to 128 characters/],
      [plant('a'.repeat(5000), '1', 'fern'), /owner must be 1 to 128 characters/],
      [plant('al ice', '1', 'fern'), /owner must be/],
      [plant('alice', '1', ''), /name must be a string of 1 to 256 characters/],
      [plant('alice', '1', 'x'.repeat(50_000)), /name must be a string of 1 to 256 characters/],
      [plant('alice', '1', 'fe\u0000rn'), /name must be .*without NUL/],
      [plant('alice', '1', 'fern', 't'.repeat(257)), /tag must be a string of at most 256 characters/],
      [plant('alice', '9223372036854775808', 'fern'), /id must be an integer between/],
      [plant('alice', '"1"', 'fern'), /id must be an integer between|id/],
      [token('tok_1', ''), /owner must be 1 to 128 characters/],
      [token('', 'alice'), /a token id must be/],
      [token('tok_1', 'x'.repeat(5000)), /owner must be/],
    ];
    for (const [line, message] of bad) {
      const db = newDb();
      const r = await importText(db, [plant('alice', '1', 'ok'), line]);
      assert.equal(r.code, 2, `${line.slice(0, 80)}: ${r.stderr}`);
      assert.match(r.stderr, /line 3: /, line.slice(0, 80));
      assert.match(r.stderr, message, line.slice(0, 80));
      assert.ok(r.stderr.length < 1000, 'the bad record is not echoed');
    }
  });

  it('keeps every record before a malformed line, then stops with its number', LIMIT, async () => {
    const db = newDb();
    const plants = Array.from({ length: 2001 }, (_, i) => plant('bob', String(i + 1), `p${i + 1}`));
    const r = await importText(db, [token('tok_kept', 'bob'), ...plants, '{bad', plant('bob', '9999', 'after')]);
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, /line 2004: not JSON/);
    const exported = await runCli(['export', '--db', db]);
    assert.equal(exported.code, 0, exported.stderr);
    const records = exported.stdout
      .trim()
      .split('\n')
      .slice(1)
      .map((l) => JSON.parse(l) as { type: string; id: unknown });
    assert.equal(records.filter((x) => x.type === 'token').length, 1);
    const ids = records.filter((x) => x.type === 'plant').map((x) => Number(x.id));
    assert.deepEqual(
      ids,
      Array.from({ length: 2001 }, (_, i) => i + 1),
      'all 2001 plants before it, none after',
    );
  });

  it('reports how many tokens it took and for which owners; --plants-only leaves them out', LIMIT, async () => {
    const lines = [
      token('tok_a1', 'alice'),
      token('tok_a2', 'alice'),
      token('tok_b1', 'bob'),
      plant('alice', '1', 'fern'),
    ];
    const db = newDb();
    const r = await importText(db, lines);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stderr, /the 3 new tokens work here now, for 2 owners: alice \(2\), bob \(1\)/);
    assert.match(r.stderr, /--plants-only/);
    const list = await runCli(['token', 'list', '--json', '--db', db]);
    assert.equal(list.stdout.trim().split('\n').length, 3);

    const plantsOnly = newDb();
    const p = await importText(plantsOnly, lines, '--plants-only');
    assert.equal(p.code, 0, p.stderr);
    assert.match(p.stderr, /0 tokens and 1 plants were new/);
    assert.match(p.stderr, /3 tokens left out \(--plants-only\)/);
    assert.doesNotMatch(p.stderr, /in the store already/);
    const again = await importText(plantsOnly, lines, '--plants-only', '--json');
    assert.equal(again.code, 0, again.stderr);
    assert.deepEqual(JSON.parse(again.stdout), {
      read: 4,
      tokens: 0,
      plants: 0,
      tokensSkipped: 3,
      plantsSkipped: 1,
      tokenOwners: {},
    });
    const none = await runCli(['token', 'list', '--json', '--db', plantsOnly]);
    assert.equal(none.stdout.trim(), '');
  });

  it('stops at a line longer than any record, with its number, without reading the rest', LIMIT, async () => {
    const chunk = Buffer.alloc(1024 * 1024, 'a');
    let pulled = 0;
    // 300 MiB in one line, made as it is read.
    const stdin = Readable.from(
      (function* () {
        yield Buffer.from(`${HEADER}\n${plant('alice', '1', 'fern')}\n{"type":"plant","name":"`);
        for (let i = 0; i < 300; i++) {
          pulled++;
          yield chunk;
        }
      })(),
    );
    let stderr = '';
    const sink = (onText: (t: string) => void) =>
      new Writable({
        write(c: Buffer, _e, done) {
          onText(c.toString());
          done();
        },
      });
    const code = await main(['import', '--db', newDb()], {
      env: {},
      stdin,
      stdout: sink(() => {}),
      stderr: sink((t) => (stderr += t)),
      isTTY: false,
      signals: new EventEmitter(),
    });
    assert.equal(code, 2, stderr);
    assert.match(stderr, /line 3 is longer than 65536 bytes/);
    assert.ok(pulled <= 2, `read ${pulled} MiB of the line`);
  });
});
