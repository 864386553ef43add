import { errors } from '../http/errors.js';
import type { NewPlant } from '../schemas/plant.js';
import { conflictInBatch, repeatedInBatch } from '../schemas/plant-batch.js';
import type { PlantLimits, PlantStore } from '../store/store.js';

/**
 * POST /plants with an array: the batch in one transaction, answered with the
 * JSON array of the plants in the order sent, or an error with nothing stored.
 * `changed` is told once when any plant was stored.
 */
export async function createBatch(
  plants: PlantStore,
  owner: string,
  batch: readonly NewPlant[],
  limits: PlantLimits | undefined,
  changed: () => void,
): Promise<string> {
  const outcome = await plants.createMany(
    owner,
    batch.map(({ id, name, tag }) => ({ id, name, tag })),
    limits,
  );
  if (outcome.kind === 'repeated') {
    throw errors.badRequest(repeatedInBatch(outcome.index, outcome.first, batch[outcome.index]!.id));
  }
  if (outcome.kind === 'conflict') throw errors.conflict(conflictInBatch(outcome.index, batch[outcome.index]!.id));
  if (outcome.outcomes.includes('created')) changed();
  // As the Plant schema serializes one: name, and tag when there is one.
  return JSON.stringify(batch.map(({ name, tag }) => (tag === undefined ? { name } : { name, tag })));
}
