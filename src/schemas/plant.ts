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
  'x-error-message': `name must be a string of 1 to ${NAME_MAX_LENGTH} characters, without NUL or unpaired surrogates`,
});
const tag = Text({
  maxLength: TAG_MAX_LENGTH,
  description: `Tag that specifies the type (at most ${TAG_MAX_LENGTH} characters, no NUL)`,
  'x-error-message': `tag must be a string of at most ${TAG_MAX_LENGTH} characters, without NUL or unpaired surrogates`,
});

export const Plant = Type.Object(
  { name, tag: Type.Optional(tag) },
  { $id: 'Plant', title: 'Plant', additionalProperties: false },
);
export type Plant = Static<typeof Plant>;

export const NewPlant = Type.Object(
  {
    id: Int64({ description: 'Identification number of the plant, unique per owner', 'x-error-message': idMessage }),
    name,
    tag: Type.Optional(tag),
  },
  {
    $id: 'NewPlant',
    title: 'NewPlant',
    additionalProperties: false,
    'x-error-message': 'request body must be a JSON object',
  },
);
export type NewPlant = Static<typeof NewPlant>;

export const PlantList = Type.Array(Type.Ref(Plant));

export const ListQuery = Type.Object(
  {
    limit: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: INT32_MAX,
        format: 'int32',
        description: 'Maximum number of plants to return; values above the server maximum are clamped to it',
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
  },
  { additionalProperties: false },
);
export type ListQuery = Static<typeof ListQuery>;

export const PlantIdParams = Type.Object(
  { id: Int64({ description: 'Identification number of the plant', 'x-error-message': idMessage }) },
  { additionalProperties: false },
);
export type PlantIdParams = Static<typeof PlantIdParams>;
