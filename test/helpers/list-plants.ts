import type { PlantFilter, PlantRecord, PlantStore } from '../../src/store/store.js';

/** A page as objects: what GET /plants sends, parsed, for tests that check a store's pages by content. */
export async function listPlants(
  plants: Pick<PlantStore, 'page'>,
  owner: string,
  limit: number,
  cursor?: string,
  filter?: PlantFilter,
): Promise<{ plants: PlantRecord[]; next?: string }> {
  const { body, next } = await plants.page(owner, limit, cursor, filter);
  const list = JSON.parse(body) as PlantRecord[];
  return next === undefined ? { plants: list } : { plants: list, next };
}
