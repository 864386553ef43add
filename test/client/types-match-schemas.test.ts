// plant-store-client writes out the shapes it reads instead of importing the
// server's schemas (it has no dependencies): they must stay the same types.
import assert from 'node:assert/strict';
import type { Static } from '@sinclair/typebox';
import { it } from '../helpers/requirements.js';
import type { ErrorBody as ClientErrorBody, Plant as ClientPlant } from '../../packages/client/src/index.js';
import { ErrorBody } from '../../src/schemas/error.js';
import { Plant } from '../../src/schemas/plant.js';

/** true only when A and B are the same type; anything else fails the build of the tests. */
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const plantSame: Same<ClientPlant, Static<typeof Plant>> = true;
const errorSame: Same<ClientErrorBody, Static<typeof ErrorBody>> = true;

it("the client's Plant and ErrorBody are the server's schemas' types, field for field", () => {
  assert.equal(plantSame && errorSame, true);
  // The type check above cannot see the schemas' field lists at run time; compare those too.
  assert.deepEqual(Object.keys(Plant.properties).sort(), ['name', 'tag']);
  assert.deepEqual(Plant.required, ['name']);
  assert.deepEqual(Object.keys(ErrorBody.properties).sort(), ['error', 'message']);
});
