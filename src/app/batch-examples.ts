import { errors, type AppError } from '../http/errors.js';
import { errorResponseWithExamples, type ErrorExample } from '../schemas/responses.js';
import { NewPlantOrBatch, conflictInBatch, repeatedInBatch } from '../schemas/plant-batch.js';
import { TooManyPlantsError } from '../store/store.js';
import { validatorCompiler } from './validation.js';

const example = (summary: string, error: AppError): ErrorExample => ({
  summary,
  value: { error: error.statusCode, message: error.message },
});

/** The message the validator gives for this body. */
function refusal(maxItems: number, body: unknown): string {
  const validate = validatorCompiler({
    schema: NewPlantOrBatch(maxItems),
    httpPart: 'body',
    method: 'POST',
    url: '/plants',
  });
  const result = validate(body) as { error?: Error };
  return result.error!.message;
}

/**
 * The error responses of POST /plants with examples of what the server
 * answers, each message made by the code that makes it: the validator's, the
 * route's, the store's.
 */
export function batchExamples(maxItems: number): Record<number, unknown> {
  const id = 9007199254740994n;
  return {
    ...errorResponseWithExamples(400, {
      field: example('An invalid field of one plant', errors.badRequest(refusal(maxItems, { id: 1n, name: '' }))),
      element: example(
        'An invalid element of a batch',
        errors.badRequest(refusal(maxItems, [{ id: 1n, name: 'Monstera' }, { id: 2n, name: 'Fern' }, { id: 3n }])),
      ),
      repeated: example('An id twice in a batch', errors.badRequest(repeatedInBatch(1, 0, id))),
      empty: example('An empty batch', errors.badRequest(refusal(maxItems, []))),
    }),
    ...errorResponseWithExamples(
      403,
      {
        scope: example('A token without plants:write', errors.insufficientScope('plants:write')),
        quota: example(
          'Over the owner quota (--max-plants-per-owner)',
          errors.quotaExceeded(new TooManyPlantsError(1000, 1000, 2).message),
        ),
      },
      "The token lacks the plants:write scope, or the plants this request would store take the owner past the server's cap on plants per owner; nothing was stored",
    ),
    ...errorResponseWithExamples(
      409,
      {
        one: example(
          'An id the owner has with another name or tag',
          errors.conflict(`a plant with id ${id} already exists with a different name or tag`),
        ),
        batch: example('The same, in a batch', errors.conflict(conflictInBatch(1, id))),
      },
      'The caller already has a plant with this id (for a batch, the id at the place named), with a different name or tag; nothing was stored',
    ),
  };
}
