// plant-store/client: a typed Plant Store client that needs nothing but fetch.
// The types of plants and errors are the server's own (from its schemas).
export type { ErrorBody } from '../schemas/error.js';
export type { Plant } from '../schemas/plant.js';
export {
  PlantStoreClient,
  type ListOptions,
  type NewPlant,
  type PlantPage,
  type PlantStoreClientOptions,
} from './client.js';
export { PlantStoreError } from './error.js';
export type { PlantId } from './ids.js';
export type { PlantChange, PlantCreated, PlantDeleted, PlantsReset, WatchOptions } from './watch.js';
