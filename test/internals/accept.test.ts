// accepts(): whether an Accept header admits a media type, q-values and
// wildcards included.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { accepts } from '../../src/http/accept.js';

const SSE = 'text/event-stream';

describe('accepts', () => {
  it('admits the type when there is no Accept header, or an empty one', () => {
    assert.equal(accepts(undefined, SSE), true);
    assert.equal(accepts('', SSE), true);
    assert.equal(accepts('  ', SSE), true);
  });

  it('admits the type itself, its type/* and */*, in any case and with parameters', () => {
    for (const header of [
      SSE,
      '*/*',
      'text/*',
      'TEXT/Event-Stream',
      'text/event-stream; charset=utf-8',
      'application/json, */*;q=0.1',
    ])
      assert.equal(accepts(header, SSE), true, header);
  });

  it('refuses a header that names only other types', () => {
    for (const header of ['application/json', 'text/html, application/xhtml+xml', 'text/plain', 'application/*'])
      assert.equal(accepts(header, SSE), false, header);
  });

  it('lets the most specific matching range decide, by its q-value; q=0 refuses', () => {
    assert.equal(accepts('text/event-stream;q=0', SSE), false);
    assert.equal(accepts('text/event-stream;q=0, */*', SSE), false);
    assert.equal(accepts('*/*;q=0, text/event-stream', SSE), true);
    assert.equal(accepts('text/*;q=0, */*', SSE), false);
    assert.equal(accepts('text/*;q=0, text/event-stream;q=0.5', SSE), true);
    assert.equal(accepts('application/json, text/event-stream;q=0.001', SSE), true);
    assert.equal(accepts('text/event-stream;q=0.0, text/event-stream;q=1', SSE), true);
    assert.equal(accepts('text/event-stream ; Q=0', SSE), false);
  });

  it('ignores a q-value that is not a number', () => {
    assert.equal(accepts('text/event-stream;q=', SSE), true);
    assert.equal(accepts('text/event-stream;q=abc', SSE), true);
  });
});
