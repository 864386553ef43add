// The client refuses to be built without a token, so that plain JavaScript
// with an unset variable fails at once instead of sending "Bearer undefined".
import assert from 'node:assert/strict';
import { it } from '../helpers/requirements.js';
import { PlantStoreClient } from '../../src/client/index.js';

const baseUrl = 'http://127.0.0.1:1';

for (const [what, token] of [
  ['undefined', undefined],
  ['null', null],
  ['an empty string', ''],
  ['blanks', '  '],
  ['a number', 42],
] as const) {
  it(`refuses ${what} as the token, naming the problem and not the value`, () => {
    assert.throws(
      () => new PlantStoreClient({ baseUrl, token: token as unknown as string }),
      (error: unknown) => {
        assert.ok(error instanceof TypeError);
        assert.match(
          error.message,
          /^PlantStoreClient needs a token \(a bearer token as "plant-store token create" prints it\), got /,
        );
        return true;
      },
    );
  });
}

it('accepts a token and sends it as a bearer token', async () => {
  let seen: string | null = null;
  const client = new PlantStoreClient({
    baseUrl,
    token: 'plnt_x',
    fetch: async (_url, init) => {
      seen = new Headers(init?.headers).get('authorization');
      return new Response('[]', { status: 200, headers: { 'content-type': 'application/json' } });
    },
  });
  assert.deepEqual(await client.listPlants(), []);
  assert.equal(seen, 'Bearer plnt_x');
});
