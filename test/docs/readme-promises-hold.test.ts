// What the README promises is what the service does: a body with a repeated
// key is refused even when both values are equal, and --cors-origin refuses
// wildcards and origins not written as browsers send them.
import assert from 'node:assert/strict';
import { useApp } from '../helpers/app.js';
import { createRaw, expectError, jsonBody, newOwner } from '../helpers/plants-http.js';
import { describeHttpLayer } from '../helpers/stores.js';
import { describe, it } from '../helpers/requirements.js';
import { ConfigError, loadConfig } from '../../src/config.js';

describeHttpLayer('duplicate keys in a create body', (fx) => {
  const h = useApp(fx);

  const DUPLICATES: Array<[string, string, RegExp]> = [
    ['the same id twice', '{"id":1,"id":1,"name":"fern"}', /^request body has a key more than once$/],
    ['the same name twice', '{"id":1,"name":"fern","name":"fern"}', /^request body has a key more than once$/],
    ['the same tag twice', '{"id":1,"name":"fern","tag":"a","tag":"a"}', /^request body has a key more than once$/],
    ['an id as a number and the same id as a string', '{"id":1,"name":"f","id":"1"}', /"id" more than once/],
    ['two different names', '{"id":1,"name":"fern","name":"moss"}', /^request body has the key "name" more than once$/],
  ];
  for (const [what, body, message] of DUPLICATES) {
    it(`refuses ${what} with a 400, storing nothing`, { timeout: 10_000 }, async () => {
      const token = await h.token(newOwner('dup'));
      expectError(await createRaw(h, token, body), 400, message);
      const list = await h.request({ method: 'GET', url: '/plants', token });
      assert.deepEqual(jsonBody(list), []);
    });
  }

  it('accepts the same key in different objects and keys that only look alike', { timeout: 10_000 }, async () => {
    const token = await h.token(newOwner('dup'));
    // Colons and quotes inside strings are not keys.
    const res = await createRaw(h, token, '{"id":1,"name":"a:\\"name\\":b","tag":"name"}');
    assert.equal(res.statusCode, 200, res.body);
    // A nested repeat of a key is counted in its own object (refused later as not an id, not as a duplicate).
    expectError(await createRaw(h, token, '{"id":{"id":1},"name":"x"}'), 400, /^id must be/);
  });
});

describe('--cors-origin refuses what the README says it refuses', () => {
  const refused = (value: string): string => {
    try {
      loadConfig({ 'cors-origin': value }, {});
    } catch (error) {
      assert.ok(error instanceof ConfigError, String(error));
      return error.message;
    }
    assert.fail(`--cors-origin ${value} was accepted`);
  };

  for (const wildcard of ['https://*.example.com', '*.example.com', 'https://app.example.com,*', 'http://*']) {
    it(`refuses the wildcard ${wildcard}`, () => {
      assert.match(
        refused(wildcard),
        /^--cors-origin must be off, \* or origins .*a wildcard is allowed only as \* alone/,
      );
    });
  }
  const MALFORMED: Array<[string, RegExp]> = [
    ['https://user:secret@app.example.com', /with a user or password \(https:\/\/app\.example\.com\)/],
    ['https://App.Example.com', /write it as https:\/\/app\.example\.com/],
    ['https://app.example.com:443', /write it as https:\/\/app\.example\.com/],
    ['https://app.example.com?x=1', /write it as https:\/\/app\.example\.com/],
    ['https://app.example.com#top', /write it as https:\/\/app\.example\.com/],
    ['https://app.example.com:99999', /must be off/],
    ['ftp://app.example.com', /must be off/],
    ['https://', /must be off/],
    ['https://a.example,', /must be off/],
  ];
  for (const [bad, message] of MALFORMED) {
    it(`refuses the malformed origin ${bad}`, () => {
      const text = refused(bad);
      assert.match(text, /^--cors-origin must be off, \* or origins/);
      assert.match(text, message);
      assert.doesNotMatch(text, /secret/);
    });
  }

  it('accepts * alone and origins as browsers send them', () => {
    for (const good of [
      '*',
      'https://app.example.com',
      'http://localhost:5173, https://a.example:8443',
      'http://[::1]:8080',
    ])
      assert.equal(loadConfig({ 'cors-origin': good }, {}).corsOrigin, good);
  });
});
