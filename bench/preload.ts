// Fills a new SQLite file before the service starts: tokens through the
// token module, plants through the store's bulk insert, never over HTTP.
import { issueToken } from '../src/auth/tokens.js';
import { openSqliteStore } from '../src/store/sqlite/store.sqlite.js';
import type { NewPlantRecord } from '../src/store/store.js';
import { ownerName, plantBody } from './scenarios.js';

const BATCH = 100_000;

/** Plants from..to as both servers store them (plantBody). */
export function* plants(from: number, to: number): Generator<NewPlantRecord> {
  for (let id = from; id <= to; id++) {
    const { name, tag } = plantBody(id);
    yield { id: BigInt(id), name, tag };
  }
}

/** Owners owner0.., each with plants 1..rowsPerOwner; returns one token per owner. */
export async function preload(path: string, owners: number, rowsPerOwner: number): Promise<string[]> {
  const store = await openSqliteStore({ path, durability: 'full' });
  try {
    const tokens: string[] = [];
    for (let o = 0; o < owners; o++) {
      const owner = ownerName(o);
      tokens.push((await issueToken(store.tokens, { owner })).token);
      for (let from = 1; from <= rowsPerOwner; from += BATCH) {
        const to = Math.min(rowsPerOwner, from + BATCH - 1);
        const n = await store.plants.insertMany(owner, plants(from, to));
        if (n !== to - from + 1) throw new Error(`preload stored ${n} of ${to - from + 1} plants for ${owner}`);
      }
    }
    return tokens;
  } finally {
    await store.close();
  }
}
