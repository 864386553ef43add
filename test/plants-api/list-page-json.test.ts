// List pages are written by the database as JSON: the body must be what the
// 200 schema's serializer (JSON.stringify's escaping) would send, for any name
// and tag, on every store.
import assert from 'node:assert/strict';
import { useApp } from '../helpers/app.js';
import { createRaw, newOwner } from '../helpers/plants-http.js';
import { describeEachStore } from '../helpers/stores.js';
import { it } from '../helpers/requirements.js';

const NAMES = [
  'plain',
  'quote " and \\ backslash',
  'tab\tnew\nline\r\b\f',
  '\u0001\u001f\u007f',
  'é 植物 🌱',
  '\u2028\u2029',
  '</script>',
];

describeEachStore('list pages as JSON', (fx) => {
  const h = useApp(fx);

  it('are the bytes JSON.stringify gives for the same plants', async () => {
    const token = await h.token(newOwner('json'));
    const plants = NAMES.map((name, i) => (i % 2 ? { name, tag: name } : { name }));
    for (const [i, p] of plants.entries()) {
      assert.equal((await createRaw(h, token, JSON.stringify({ id: i + 1, ...p }))).statusCode, 200);
    }
    const res = await h.request({ method: 'GET', url: '/plants?limit=100', token });
    assert.equal(res.statusCode, 200);
    assert.equal(res.body, JSON.stringify(plants));
  });
});
