import { Type, type Static, type TSchema } from '@sinclair/typebox';
import { NewPlant, NewPlantComponent, Plant } from './plant.js';

/**
 * Marks the create body that is either one NewPlant or an array of them. The
 * validator (app/validation.ts) tells the two apart by the body's JSON type,
 * so that a single object is checked, and its errors worded, exactly as
 * before arrays were accepted, and an array's errors name the element.
 */
export const ONE_OR_BATCH = 'x-one-or-batch';

/** The create body as validated: one NewPlant, or 1 to `maxItems` of them. */
export function NewPlantOrBatch(maxItems: number) {
  return Type.Union([NewPlant, Type.Array(NewPlant, { minItems: 1, maxItems })], { [ONE_OR_BATCH]: true });
}
export type NewPlantOrBatch = Static<ReturnType<typeof NewPlantOrBatch>>;

/** The parts of a NewPlantOrBatch schema: the element's schema and the most elements. */
export function oneOrBatchParts(schema: TSchema): { one: TSchema; maxItems: number } | undefined {
  if (schema[ONE_OR_BATCH] !== true) return undefined;
  const [one, many] = schema.anyOf as [TSchema, TSchema & { maxItems: number }];
  return { one, maxItems: many.maxItems };
}

// The words of the batch's refusals, said by the route and shown by the document's examples.

/** An element that is not an object, at /index. */
export const NOT_AN_OBJECT = 'must be a JSON object with an id and a name';

export const emptyBatch = (maxItems: number) => `request body is an empty array: send 1 to ${maxItems} plants`;

export const batchTooLarge = (maxItems: number, length: number) =>
  `a batch holds at most ${maxItems} plants; this one has ${length}`;

export const repeatedInBatch = (index: number, first: number, id: bigint) =>
  `/${index}/id: id ${id} is also at /${first}: each id may appear once in a batch; nothing was stored`;

export const conflictInBatch = (index: number, id: bigint) =>
  `/${index}/id: a plant with id ${id} already exists with a different name or tag; nothing was stored`;

const EXAMPLE_BATCH = [
  { id: '9007199254740993', name: 'Monstera', tag: 'tropical' },
  { id: '9007199254740994', name: 'Fern' },
];

/** The create body as the OpenAPI document shows it: oneOf NewPlant or an array of them. */
export function documentedBody(maxItems: number): TSchema {
  return Type.Unsafe({
    description:
      `One NewPlant, or an array of 1 to ${maxItems} of them (a batch, stored in one transaction: all or none). ` +
      'A single object is answered with one Plant, an array with an array of Plants in the same order.',
    oneOf: [
      Type.Ref(NewPlantComponent),
      Type.Array(Type.Ref(NewPlantComponent), { minItems: 1, maxItems, title: 'NewPlantBatch' }),
    ],
    'x-examples': {
      one: { summary: 'One plant', value: EXAMPLE_BATCH[0] },
      batch: { summary: 'A batch of two plants', value: EXAMPLE_BATCH },
    },
  });
}

/** The 200 of a create as the document shows it: one Plant, or an array of them for a batch. */
export const documentedCreated: TSchema = Type.Unsafe({
  description: 'The stored plant; for a batch, the stored plants in the order sent (replays included)',
  oneOf: [Type.Ref(Plant), Type.Array(Type.Ref(Plant), { title: 'PlantBatch' })],
  'x-examples': {
    one: { summary: 'One plant', value: { name: 'Monstera', tag: 'tropical' } },
    batch: { summary: 'A batch of two plants', value: [{ name: 'Monstera', tag: 'tropical' }, { name: 'Fern' }] },
  },
});
