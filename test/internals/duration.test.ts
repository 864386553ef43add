// parseDuration: the --expires-in of token create.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { MAX_DURATION_MS, parseDuration } from '../../src/auth/tokens.js';

const S = 1000;
const M = 60 * S;
const H = 60 * M;
const D = 24 * H;

describe('parseDuration', () => {
  it('reads seconds, minutes, hours, days and weeks', () => {
    assert.equal(parseDuration('3600s'), 3600 * S);
    assert.equal(parseDuration('90m'), 90 * M);
    assert.equal(parseDuration('12h'), 12 * H);
    assert.equal(parseDuration('30d'), 30 * D);
    assert.equal(parseDuration('2w'), 14 * D);
    assert.equal(parseDuration('1s'), S);
  });

  it('accepts up to 100 years (36525d) and no more', () => {
    assert.equal(parseDuration('36525d'), MAX_DURATION_MS);
    assert.equal(MAX_DURATION_MS, 36525 * D);
    assert.throws(() => parseDuration('36526d'), /at most 100 years/);
    assert.throws(() => parseDuration('5300w'), /at most 100 years/);
    assert.throws(() => parseDuration('999999999d'), /at most 100 years/);
  });

  it('refuses anything else with the accepted forms in the message', () => {
    for (const bad of [
      '',
      '0d',
      '0s',
      '30',
      'd',
      '1.5h',
      '-1d',
      '1y',
      '1D',
      ' 1d',
      '1d ',
      '1 d',
      '1e3s',
      'forever',
      '1234567890s',
    ]) {
      assert.throws(
        () => parseDuration(bad),
        (error: Error) => /30d, 12h, 90m, 3600s or 2w/.test(error.message) && error.message.includes(`"${bad}"`),
        `"${bad}"`,
      );
    }
  });
});
