// plant-store-client: a typed Plant Store client that needs nothing but fetch.
export type { ErrorBody, Plant } from './types.js';
export {
  PlantStoreClient,
  type ListOptions,
  type NewPlant,
  type PlantPage,
  type PlantStoreClientOptions,
} from './client.js';
export { CredentialsEndedError, PlantStoreError, type CredentialsEndReason } from './error.js';
export type { PlantId } from './ids.js';
export type { PlantChange, PlantCreated, PlantDeleted, PlantsReset, WatchOptions } from './watch.js';
