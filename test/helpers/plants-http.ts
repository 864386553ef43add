// Assertions and request shortcuts shared by the HTTP suites (test/plants-api/, test/auth/).
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import type { LightMyRequestResponse } from 'fastify';
import type { AppHarness } from './app.js';

export interface PlantBody {
  name: string;
  tag?: string;
}

/** A fresh owner name, so every test works on its own empty collection. */
export function newOwner(prefix = 'o'): string {
  return `${prefix}-${randomBytes(6).toString('hex')}`;
}

/** The JSON body of a response, asserting it is declared as JSON. */
export function jsonBody(res: LightMyRequestResponse): unknown {
  assert.match(
    String(res.headers['content-type']),
    /^application\/json\b/,
    `content-type of ${res.statusCode} response`,
  );
  return JSON.parse(res.body) as unknown;
}

/**
 * A non-2xx answer in the error shape: the status, a JSON content type, and
 * exactly {"error": status, "message": ...} where the message matches `message`.
 */
export function expectError(res: LightMyRequestResponse, status: number, message: RegExp | string): string {
  assert.equal(res.statusCode, status, `expected ${status}, got ${res.statusCode}: ${res.body}`);
  const body = jsonBody(res) as Record<string, unknown>;
  assert.deepEqual(Object.keys(body).sort(), ['error', 'message'], `error body keys: ${res.body}`);
  assert.equal(body.error, status);
  assert.equal(typeof body.message, 'string');
  if (typeof message === 'string') assert.equal(body.message, message);
  else assert.match(body.message as string, message);
  assert.equal(res.headers['x-content-type-options'], 'nosniff');
  return body.message as string;
}

/** POST /plants with a body sent verbatim (so int64 literals keep every digit). */
export function createRaw(
  h: AppHarness,
  token: string | undefined,
  raw: string,
  headers: Record<string, string> = {},
): Promise<LightMyRequestResponse> {
  return h.request({
    method: 'POST',
    url: '/plants',
    token,
    headers: { 'content-type': 'application/json', ...headers },
    payload: raw,
  });
}

/** POST /plants expecting 200 with the plant echoed back (no id; tag only when given). */
export async function createOk(
  h: AppHarness,
  token: string,
  id: bigint | number,
  name: string,
  tag?: string,
): Promise<void> {
  const raw = `{"id":${id},"name":${JSON.stringify(name)}${tag === undefined ? '' : `,"tag":${JSON.stringify(tag)}`}}`;
  const res = await createRaw(h, token, raw);
  assert.equal(res.statusCode, 200, `create ${raw}: ${res.body}`);
  assert.deepEqual(jsonBody(res), tag === undefined ? { name } : { name, tag });
}

export function deletePlant(
  h: AppHarness,
  token: string | undefined,
  id: bigint | number | string,
): Promise<LightMyRequestResponse> {
  return h.request({ method: 'DELETE', url: `/plants/${id}`, token });
}

// A filtered list's next page keeps its tag, between the limit and the cursor.
const NEXT_LINK = /^<(\/plants\?limit=(\d+)(?:&tag=[^>&]+)?&cursor=([^>&]+))>; rel="next"$/;

export interface Page {
  plants: PlantBody[];
  /** The URL of the next page from the Link header, if any. */
  next?: string;
  /** The limit the Link header carries. */
  nextLimit?: number;
}

/** One GET of a list URL, asserting 200, no-store and a well-formed Link header when present. */
export async function getPage(h: AppHarness, token: string, url = '/plants'): Promise<Page> {
  const res = await h.request({ method: 'GET', url, token });
  assert.equal(res.statusCode, 200, `GET ${url}: ${res.body}`);
  assert.equal(res.headers['cache-control'], 'no-store');
  const plants = jsonBody(res);
  assert.ok(Array.isArray(plants), `GET ${url} answered ${res.body}`);
  const link = res.headers.link;
  if (link === undefined) return { plants: plants as PlantBody[] };
  const m = NEXT_LINK.exec(String(link));
  assert.ok(m, `malformed Link header: ${String(link)}`);
  return { plants: plants as PlantBody[], next: m[1]!, nextLimit: Number(m[2]) };
}

/** Every plant of the caller, following rel="next" to the end; also the page sizes seen. */
export async function listAll(
  h: AppHarness,
  token: string,
  firstUrl = '/plants',
): Promise<{ plants: PlantBody[]; pageSizes: number[] }> {
  const plants: PlantBody[] = [];
  const pageSizes: number[] = [];
  let url: string | undefined = firstUrl;
  while (url !== undefined) {
    assert.ok(pageSizes.length < 10_000, 'paging does not end');
    const page: Page = await getPage(h, token, url);
    plants.push(...page.plants);
    pageSizes.push(page.plants.length);
    url = page.next;
  }
  return { plants, pageSizes };
}

/** The names of all the caller's plants, in list order. */
export async function names(h: AppHarness, token: string): Promise<string[]> {
  return (await listAll(h, token)).plants.map((p) => p.name);
}
