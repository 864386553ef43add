import { Type, type Static } from '@sinclair/typebox';

export const ErrorBody = Type.Object(
  {
    error: Type.Integer({ format: 'int32', description: 'The HTTP status code of this response' }),
    message: Type.String({ description: 'What went wrong, in words meant for a person' }),
  },
  { $id: 'Error', title: 'Error', additionalProperties: false },
);
export type ErrorBody = Static<typeof ErrorBody>;
