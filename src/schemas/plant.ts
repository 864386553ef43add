import { Type, type Static } from '@sinclair/typebox';
import { INT64_MAX, INT64_MIN, Int64 } from './int64.js';
import { Text } from './text.js';

export const NAME_MAX_LENGTH = 256;
export const TAG_MAX_LENGTH = 256;
export const INT32_MAX = 2 ** 31 - 1;

const idMessage = `id must be an integer between ${INT64_MIN} and ${INT64_MAX}`;

const name = Text({
  minLength: 1,
  maxLength: NAME_MAX_LENGTH,
  description: `The name of the plant (1 to ${NAME_MAX_LENGTH} characters, no NUL)`,
  examples: ['Monstera'],
  'x-error-message': `name must be a string of 1 to ${NAME_MAX_LENGTH} characters, without NUL or unpaired surrogates`,
});
const tag = Text({
  maxLength: TAG_MAX_LENGTH,
  description: `Tag that specifies the type (at most ${TAG_MAX_LENGTH} characters, no NUL)`,
  examples: ['tropical'],
  'x-error-message': `tag must be a string of at most ${TAG_MAX_LENGTH} characters, without NUL or unpaired surrogates`,
});

const plantFields = { name, tag: Type.Optional(tag) };

// Open, as in the interface's seed, so that NewPlant can be "every field of
// Plant plus id" (allOf). Serialization writes only name and tag regardless.
export const Plant = Type.Object(plantFields, {
  $id: 'Plant',
  title: 'Plant',
  description: 'A plant as the service returns it: its name and tag, never its id',
});
export type Plant = Static<typeof Plant>;

const ID_DESCRIPTION =
  'Identification number of the plant, unique per owner: an int64 (-2^63 to 2^63-1), sent as a JSON integer or as a ' +
  'string of decimal digits. Send the string form ("9007199254740993") from languages whose numbers are doubles, ' +
  'such as JavaScript: they round integers above 2^53 before the request is sent, which the service cannot detect. ' +
  'Written as JSON writes integers: no fraction or exponent (1.0 and 1e3 are refused), no leading zeros, no "+".';

// Examples are what the /docs page fills its forms with: an id past 2^53, as
// the string that keeps it exact, so "Try it out" works without editing.
export const ID_EXAMPLE = '9007199254740993';

const id = Int64({ description: ID_DESCRIPTION, examples: [ID_EXAMPLE], 'x-error-message': idMessage });

/** The create body as validated: the id and every field of Plant, nothing else. */
export const NewPlant = Type.Object(
  { id, ...plantFields },
  { additionalProperties: false, 'x-error-message': 'request body must be a JSON object' },
);
export type NewPlant = Static<typeof NewPlant>;

/**
 * NewPlant as the OpenAPI document shows it, the seed's way: allOf Plant and
 * id, closed to other properties. The OpenAPI tests check that it accepts
 * exactly the bodies NewPlant accepts.
 */
export const NewPlantComponent = Type.Unsafe<NewPlant>({
  $id: 'NewPlant',
  title: 'NewPlant',
  description: 'A plant to create: every field of Plant plus its id',
  examples: [{ id: ID_EXAMPLE, name: 'Monstera', tag: 'tropical' }],
  allOf: [Type.Ref(Plant), Type.Object({ id })],
  unevaluatedProperties: false,
});

export const PlantList = Type.Array(Type.Ref(Plant));

export const ListQuery = Type.Object(
  {
    limit: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: INT32_MAX,
        format: 'int32',
        description: 'Maximum number of plants to return; values above the server maximum are clamped to it',
        examples: [10],
        'x-error-message': `limit must be an integer between 1 and ${INT32_MAX}`,
      }),
    ),
    cursor: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 200,
        description: 'Opaque position from a previous page\'s Link rel="next" URL',
        'x-error-message': 'cursor must be a value taken from a Link rel="next" URL',
      }),
    ),
    tag: Type.Optional(
      Text({
        minLength: 1,
        maxLength: TAG_MAX_LENGTH,
        description: `Only the plants with exactly this tag (1 to ${TAG_MAX_LENGTH} characters, compared exactly, case included)`,
        examples: ['tropical'],
        'x-error-message': `tag must be a string of 1 to ${TAG_MAX_LENGTH} characters, without NUL or unpaired surrogates`,
      }),
    ),
  },
  { additionalProperties: false },
);
export type ListQuery = Static<typeof ListQuery>;

/** The query of a route that takes none: any parameter is refused, as on GET /plants, rather than ignored. */
export const NoQuery = Type.Object({}, { additionalProperties: false });

export const PlantIdParams = Type.Object(
  {
    id: Int64({
      description:
        "Identification number of the plant: an int64 in decimal. Build the path from the id's text, not from a " +
        'JavaScript number, which rounds integers above 2^53.',
      examples: [ID_EXAMPLE],
      'x-error-message': idMessage,
    }),
  },
  { additionalProperties: false },
);
export type PlantIdParams = Static<typeof PlantIdParams>;

/** The request headers of a conditional GET, as the OpenAPI document shows them (any value is accepted). */
export const ConditionalGetHeaders = Type.Object({
  'if-none-match': Type.Optional(
    Type.String({
      description:
        'ETags from earlier answers, comma-separated, or *: when one is the current ETag, the answer is 304 with no body',
      examples: ['"8sLZs8J404U17CNVtKJY1SigR_e"'],
    }),
  ),
});
