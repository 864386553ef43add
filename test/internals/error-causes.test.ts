// The one walk over what an error wraps, and the checks and messages built on it.
import assert from 'node:assert/strict';
import { errorChain, errorMessages } from '../../src/store/error-causes.js';
import { isUnavailableError, refusedStartupParameter } from '../../src/store/postgres/errors.postgres.js';
import { describe, it } from '../helpers/requirements.js';

const withCode = (message: string, code: string) => Object.assign(new Error(message), { code });

describe('errorChain', { timeout: 10_000 }, () => {
  it('lists the error, the members of an AggregateError and the causes, outermost first', () => {
    const refused = withCode('connect ECONNREFUSED ::1:5432', 'ECONNREFUSED');
    const unreachable = withCode('connect ENETUNREACH 10.0.0.1:5432', 'ENETUNREACH');
    const aggregate = new AggregateError([refused, unreachable], 'connect failed', { cause: 'a string cause' });
    const outer = new Error('store unavailable', { cause: aggregate });
    assert.deepEqual(errorChain(outer), [outer, aggregate, refused, unreachable, 'a string cause']);
    assert.deepEqual(errorChain(undefined), []);
  });

  it('ends on a cycle, and after ten errors', () => {
    const loop = new Error('loop');
    loop.cause = loop;
    assert.deepEqual(errorChain(loop), [loop]);
    let deep: Error = new Error('0');
    for (let i = 1; i < 50; i++) deep = new Error(String(i), { cause: deep });
    assert.equal(errorChain(deep).length, 10);
  });

  it('says an error in one line with the messages of all it wraps, each once', () => {
    const refused = withCode('connect ECONNREFUSED 127.0.0.1:5432', 'ECONNREFUSED');
    const deep = new Error('store unavailable', { cause: new Error('pool failed', { cause: refused }) });
    assert.equal(errorMessages(deep), 'store unavailable: pool failed: connect ECONNREFUSED 127.0.0.1:5432');
    const aggregate = new Error('fetch failed', { cause: new AggregateError([refused], '') });
    assert.equal(errorMessages(aggregate), 'fetch failed: connect ECONNREFUSED 127.0.0.1:5432');
    const repeated = new Error(`migration failed: ${refused.message}`, { cause: refused });
    assert.equal(errorMessages(repeated), 'migration failed: connect ECONNREFUSED 127.0.0.1:5432');
    assert.equal(errorMessages(new Error('plain', { cause: 'a string cause' })), 'plain');
    assert.equal(errorMessages('not an error'), 'not an error');
  });

  it('lets isUnavailableError and refusedStartupParameter look inside wrapped errors', () => {
    const refused = withCode('connect ECONNREFUSED 127.0.0.1:5432', 'ECONNREFUSED');
    const wrapped = new Error('query failed', { cause: new AggregateError([new Error('other'), refused]) });
    assert.equal(isUnavailableError(wrapped), true);
    assert.equal(isUnavailableError(new Error('syntax error', { cause: new Error('near FROM') })), false);
    const pooler = new Error('pool failed', { cause: new Error('unsupported startup parameter: extra_float_digits') });
    assert.match(refusedStartupParameter(pooler)?.message ?? '', /startup parameter "extra_float_digits"/);
    assert.equal(refusedStartupParameter(wrapped), undefined);
  });
});
