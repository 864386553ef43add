// The pieces that keep log lines bounded: URL redaction, the sampler of
// repeated lines, and the failure log that writes one stack per kind.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FailureLog } from '../../src/app/logger.js';
import { LogSampler, loggableUrl } from '../../src/http/log-lines.js';
import { StoreUnavailableError } from '../../src/store/store.js';

describe('loggableUrl', () => {
  it('keeps ordinary URLs, ids, UUIDs and trace ids as they are', { timeout: 5000 }, () => {
    for (const url of [
      '/plants?limit=10',
      '/plants/9223372036854775807',
      '/docs/static/swagger-ui-bundle.js',
      '/plants?x=123e4567-e89b-12d3-a456-426614174000',
      '/plants?trace=4bf92f3577b34da6a3ce929d0e0e4736',
    ])
      assert.equal(loggableUrl(url), url);
  });

  it('redacts JWTs, our tokens, long random runs and credential parameters', { timeout: 5000 }, () => {
    assert.equal(
      loggableUrl('/plants?access_token=eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln'),
      '/plants?access_token=[redacted]',
    );
    assert.equal(loggableUrl('/plants/eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln'), '/plants/[redacted]');
    assert.equal(loggableUrl('/plants/eyJhbGciOiJSUzI1NiJ9%2EeyJzdWIiOiJ4In0%2Ec2ln'), '/plants/[redacted]');
    assert.equal(loggableUrl(`/plants?t=plnt_${'a'.repeat(43)}`), '/plants?t=plnt_[redacted]');
    assert.equal(loggableUrl('/plants?x=AbCdEf0123456789AbCdEf0123456789xyz'), '/plants?x=[redacted]');
    assert.equal(loggableUrl('/plants?x=' + 'ab12'.repeat(12)), '/plants?x=[redacted]');
    assert.equal(loggableUrl('/plants?PASSWORD=short&limit=1'), '/plants?PASSWORD=[redacted]&limit=1');
    assert.equal(loggableUrl('http://user:pw@host/plants'), 'http://[redacted]@host/plants');
  });

  it('cuts a long URL after redacting it', { timeout: 5000 }, () => {
    const url = loggableUrl(`/plants?x=${'y'.repeat(10_000)}`);
    assert.equal(url.length, 513);
    assert.ok(url.endsWith('…'));
  });
});

describe('LogSampler', () => {
  it('writes the first line of a kind, then one per interval with the count left out', { timeout: 5000 }, () => {
    const sampler = new LogSampler(1000);
    assert.deepEqual(sampler.take('a', 0), { first: true, omitted: 0 });
    for (let t = 1; t < 1000; t += 10) assert.equal(sampler.take('a', t), undefined);
    assert.deepEqual(sampler.take('b', 500), { first: true, omitted: 0 });
    assert.deepEqual(sampler.take('a', 1000), { first: false, omitted: 100 });
    assert.equal(sampler.take('a', 1001), undefined);
  });

  it('keeps at most maxKinds kinds', { timeout: 5000 }, () => {
    const sampler = new LogSampler(1000, 2);
    sampler.take('a', 0);
    sampler.take('b', 0);
    sampler.take('c', 0);
    assert.deepEqual(sampler.take('a', 1), { first: true, omitted: 0 });
  });
});

describe('FailureLog', () => {
  it('logs one stack for a thousand writes refused by a full disk', { timeout: 5000 }, () => {
    const failures = new FailureLog();
    const full = () =>
      new StoreUnavailableError(Object.assign(new Error('database or disk is full'), { code: 'SQLITE_FULL' }));
    const lines = Array.from({ length: 1000 }, () => failures.sample(full())).filter((line) => line !== undefined);
    assert.equal(lines.length, 1);
    assert.ok(lines[0]!.err instanceof StoreUnavailableError);
    // Another kind of failure still gets its own stack.
    assert.ok(failures.sample(new TypeError('boom'))?.err instanceof TypeError);
  });

  it('tells failures apart by everything they wrap, not only their first cause', { timeout: 5000 }, () => {
    const failures = new FailureLog();
    const refused = (why: string) =>
      new StoreUnavailableError(new Error('connection failed', { cause: new AggregateError([new Error(why)]) }));
    assert.ok(failures.sample(refused('connect ECONNREFUSED 10.0.0.1:5432'))?.err instanceof StoreUnavailableError);
    assert.ok(failures.sample(refused('connect ETIMEDOUT 10.0.0.2:5432'))?.err instanceof StoreUnavailableError);
  });
});
