// The export format: newline-delimited JSON, one record per line, readable by
// any store. Ids are written as exact JSON integers (JSON.stringify cannot
// write a bigint) and read back as bigints.
import { parse } from 'lossless-json';
import { INT64_MAX, INT64_MIN, parseJsonNumber } from '../schemas/int64.js';
import { SCOPES, type Scope, type Store, type TokenDump } from '../store/store.js';

export const DUMP_FORMAT = 'plant-store-export';
export const DUMP_VERSION = 1;

// Plants of one owner that import hands to the store at a time.
const PLANT_BATCH = 5000;

export interface Progress {
  tokens: number;
  plants: number;
}

type Line =
  | { type: typeof DUMP_FORMAT; version: number }
  | ({ type: 'token' } & TokenDump)
  | { type: 'plant'; owner: string; id: bigint; name: string; tag?: string };

const quote = (s: string) => JSON.stringify(s);
const date = (d: Date | undefined) => (d === undefined ? 'null' : quote(d.toISOString()));

/** Writes every token and plant of `store` as dump lines; `write` resolves when the line may be followed by more. */
export async function writeDump(
  store: Store,
  write: (line: string) => Promise<void> | void,
  onProgress: (p: Progress) => void = () => {},
): Promise<Progress> {
  const progress: Progress = { tokens: 0, plants: 0 };
  await write(JSON.stringify({ type: DUMP_FORMAT, version: DUMP_VERSION }) + '\n');
  for await (const t of store.transfer.tokens()) {
    await write(
      `{"type":"token","id":${quote(t.id)},"owner":${quote(t.owner)},"scopes":${JSON.stringify(t.scopes)},` +
        `"createdAt":${date(t.createdAt)},"expiresAt":${date(t.expiresAt)},"revokedAt":${date(t.revokedAt)},` +
        `"hash":${quote(t.hash.toString('base64'))}}\n`,
    );
    progress.tokens++;
  }
  for await (const { owner, plant } of store.transfer.plants()) {
    const tag = plant.tag === undefined ? '' : `,"tag":${quote(plant.tag)}`;
    await write(`{"type":"plant","owner":${quote(owner)},"id":${plant.id},"name":${quote(plant.name)}${tag}}\n`);
    if (++progress.plants % 10_000 === 0) onProgress(progress);
  }
  return progress;
}

export class DumpError extends Error {
  override name = 'DumpError';
}

function isString(v: unknown): v is string {
  return typeof v === 'string';
}

function toDate(v: unknown, field: string, optional: boolean): Date | undefined {
  if (v === null && optional) return undefined;
  const d = isString(v) ? new Date(v) : undefined;
  if (d === undefined || Number.isNaN(d.getTime())) throw new DumpError(`${field} must be a date`);
  return d;
}

function parseLine(text: string): Line {
  let v: Record<string, unknown>;
  try {
    v = parse(text, null, { parseNumber: parseJsonNumber }) as Record<string, unknown>;
  } catch (error) {
    throw new DumpError(`not JSON: ${(error as Error).message}`);
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new DumpError('not a JSON object');
  if (v.type === DUMP_FORMAT) return { type: DUMP_FORMAT, version: Number(v.version) };
  if (v.type === 'plant') {
    const { owner, id, name, tag } = v;
    if (!isString(owner) || !isString(name) || (tag !== undefined && !isString(tag))) {
      throw new DumpError('a plant needs a string owner and name, and a string tag if any');
    }
    if (typeof id !== 'bigint' || id < INT64_MIN || id > INT64_MAX) throw new DumpError('id must be an int64');
    return tag === undefined ? { type: 'plant', owner, id, name } : { type: 'plant', owner, id, name, tag };
  }
  if (v.type === 'token') {
    const { id, owner, scopes, hash } = v;
    if (!isString(id) || !isString(owner) || !isString(hash)) throw new DumpError('a token needs id, owner and hash');
    if (!Array.isArray(scopes) || !scopes.every((s) => SCOPES.includes(s as Scope))) {
      throw new DumpError(`scopes must be a list of ${SCOPES.join(', ')}`);
    }
    const digest = Buffer.from(hash, 'base64');
    if (digest.length !== 32) throw new DumpError('hash must be a base64 SHA-256 digest');
    return {
      type: 'token',
      id,
      owner,
      scopes: scopes as Scope[],
      hash: digest,
      createdAt: toDate(v.createdAt, 'createdAt', false)!,
      expiresAt: toDate(v.expiresAt, 'expiresAt', true),
      revokedAt: toDate(v.revokedAt, 'revokedAt', true),
    };
  }
  throw new DumpError(`unknown record type ${JSON.stringify(v.type)}`);
}

export interface ImportResult extends Progress {
  /** Records read (tokens and plants), whether new or already present. */
  read: number;
}

/**
 * Reads dump lines into `store`. Plants keep their order (each owner's are
 * appended in dump order) and records the store has already (same token,
 * same plant id of the same owner) are skipped, so importing twice changes
 * nothing. A bad line stops the import with its line number; what came
 * before it is stored, and running the import again is safe.
 */
export async function readDump(
  store: Store,
  lines: AsyncIterable<string>,
  onProgress: (p: ImportResult) => void = () => {},
): Promise<ImportResult> {
  const result: ImportResult = { tokens: 0, plants: 0, read: 0 };
  let tokens: TokenDump[] = [];
  let owner = '';
  let plants: { id: bigint; name: string; tag?: string }[] = [];
  const flushTokens = async () => {
    if (tokens.length > 0) result.tokens += await store.transfer.importTokens(tokens);
    tokens = [];
  };
  const flushPlants = async () => {
    if (plants.length > 0) result.plants += await store.plants.insertMany(owner, plants);
    plants = [];
    onProgress(result);
  };
  let n = 0;
  let sawHeader = false;
  for await (const text of lines) {
    n++;
    if (text.trim() === '') continue;
    let line: Line;
    try {
      line = parseLine(text);
      if (!sawHeader && line.type !== DUMP_FORMAT)
        throw new DumpError(`the first line must be the ${DUMP_FORMAT} header`);
      if (line.type === DUMP_FORMAT && line.version !== DUMP_VERSION) {
        throw new DumpError(
          `version ${line.version} is not supported (this plant-store reads version ${DUMP_VERSION})`,
        );
      }
    } catch (error) {
      throw new DumpError(`line ${n}: ${(error as Error).message}`);
    }
    if (line.type === DUMP_FORMAT) {
      sawHeader = true;
      continue;
    }
    result.read++;
    if (line.type === 'token') {
      const { type: _, ...token } = line;
      tokens.push(token);
      if (tokens.length >= 1000) await flushTokens();
      continue;
    }
    await flushTokens();
    if (line.owner !== owner || plants.length >= PLANT_BATCH) {
      await flushPlants();
      owner = line.owner;
    }
    plants.push(
      line.tag === undefined ? { id: line.id, name: line.name } : { id: line.id, name: line.name, tag: line.tag },
    );
  }
  if (!sawHeader) throw new DumpError(`no ${DUMP_FORMAT} header: is this a plant-store export?`);
  await flushTokens();
  await flushPlants();
  return result;
}
