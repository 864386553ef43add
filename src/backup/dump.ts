// The export format: newline-delimited JSON, one record per line, readable by
// any store. Ids are written as exact JSON integers (JSON.stringify cannot
// write a bigint) and read back as bigints.
import { TypeCompiler } from '@sinclair/typebox/compiler';
import { parse } from 'lossless-json';
import { parseJsonNumber } from '../schemas/int64.js';
import { OWNER_RULE, OWNER_SHAPE } from '../auth/tokens.js';
import { NewPlant } from '../schemas/plant.js';
import { SCOPES, type Scope, type Store, type TokenDump } from '../store/store.js';

export const DUMP_FORMAT = 'plant-store-export';
export const DUMP_VERSION = 1;

// Plants of one owner that import hands to the store at a time.
const PLANT_BATCH = 5000;
/**
 * The longest line import reads. The longest valid record (a plant with a
 * 128-character owner and 256-character name and tag, every character
 * escaped) is under 4 KiB; anything much longer is not an export.
 */
export const MAX_LINE_BYTES = 64 * 1024;

// Records are checked with the API's own schema and owner rule: import stores
// nothing a request could not have stored.
const newPlant = TypeCompiler.Compile(NewPlant);
const TOKEN_ID = /^[A-Za-z0-9_.-]{1,128}$/;

function checkOwner(owner: unknown): asserts owner is string {
  if (!isString(owner) || !OWNER_SHAPE.test(owner)) throw new DumpError(OWNER_RULE);
}

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
    checkOwner(owner);
    const plant = tag === undefined ? { id, name } : { id, name, tag };
    if (!newPlant.Check(plant)) {
      const error = newPlant.Errors(plant).First();
      const message = error?.schema['x-error-message'] as string | undefined;
      throw new DumpError(message ?? `${error?.path ?? 'plant'}: ${error?.message ?? 'not a plant'}`);
    }
    return { type: 'plant', owner, ...plant };
  }
  if (v.type === 'token') {
    const { id, owner, scopes, hash } = v;
    if (!isString(id) || !TOKEN_ID.test(id))
      throw new DumpError('a token id must be 1 to 128 letters, digits, ".", "_" or "-"');
    checkOwner(owner);
    if (!isString(hash)) throw new DumpError('a token needs a hash');
    if (
      !Array.isArray(scopes) ||
      scopes.length === 0 ||
      new Set(scopes).size !== scopes.length ||
      !scopes.every((s) => SCOPES.includes(s as Scope))
    ) {
      throw new DumpError(`scopes must be a non-empty list of distinct ${SCOPES.join(', ')}`);
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

/**
 * What an import did with each record it read: stored (`tokens`, `plants`)
 * or skipped, so that `read` = tokens + tokensSkipped + plants + plantsSkipped.
 */
export interface ImportResult extends Progress {
  /** Records read (tokens and plants), whether new or already present. */
  read: number;
  /** The tokens stored, by owner (new ones only). */
  tokenOwners: Map<string, number>;
  /** Token records not stored: the store has a token with that id or hash already, or plantsOnly left them all out. */
  tokensSkipped: number;
  /** Plant records not stored: the owner has a plant with that id already (stored before, or earlier in the dump). */
  plantsSkipped: number;
}

export interface ImportOptions {
  /** Leave the dump's tokens out and store only its plants. */
  plantsOnly?: boolean;
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
  { plantsOnly = false }: ImportOptions = {},
): Promise<ImportResult> {
  const result: ImportResult = {
    tokens: 0,
    plants: 0,
    read: 0,
    tokenOwners: new Map(),
    tokensSkipped: 0,
    plantsSkipped: 0,
  };
  let tokens: TokenDump[] = [];
  let owner = '';
  let plants: { id: bigint; name: string; tag?: string }[] = [];
  const flushTokens = async () => {
    // One owner at a time, so that the report can say whose tokens were new.
    const byOwner = new Map<string, TokenDump[]>();
    for (const t of tokens) {
      const list = byOwner.get(t.owner);
      if (list) list.push(t);
      else byOwner.set(t.owner, [t]);
    }
    tokens = [];
    for (const [tokenOwner, theirs] of byOwner) {
      const stored = await store.transfer.importTokens(theirs);
      result.tokensSkipped += theirs.length - stored;
      if (stored === 0) continue;
      result.tokens += stored;
      result.tokenOwners.set(tokenOwner, (result.tokenOwners.get(tokenOwner) ?? 0) + stored);
    }
  };
  const flushPlants = async () => {
    if (plants.length > 0) {
      const stored = await store.plants.insertMany(owner, plants);
      result.plants += stored;
      result.plantsSkipped += plants.length - stored;
    }
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
      // What came before the bad line is stored, as promised: the held-back batches too.
      await flushTokens();
      await flushPlants();
      throw new DumpError(`line ${n}: ${(error as Error).message}`);
    }
    if (line.type === DUMP_FORMAT) {
      sawHeader = true;
      continue;
    }
    result.read++;
    if (line.type === 'token') {
      if (plantsOnly) {
        result.tokensSkipped++;
        continue;
      }
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
