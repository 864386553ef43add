// Reading a Prometheus scrape of the admin port in tests: the samples of its
// text exposition, and the value of one of them.
import assert from 'node:assert/strict';
import { httpRequest } from './server.js';

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** The samples of a Prometheus text exposition (enough of the format for our own output). */
export function parseExposition(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    assert.ok(m, `not a sample line: ${line}`);
    const labels: Record<string, string> = {};
    for (const [, k, v] of (m[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[k!] = v!;
    samples.push({ name: m[1]!, labels, value: Number(m[3]) });
  }
  return samples;
}

/** The value of the one sample with exactly these labels, or undefined. */
export function valueOf(samples: Sample[], name: string, labels: Record<string, string> = {}): number | undefined {
  const want = Object.entries(labels);
  const found = samples.filter(
    (s) => s.name === name && Object.keys(s.labels).length === want.length && want.every(([k, v]) => s.labels[k] === v),
  );
  assert.ok(found.length <= 1, `several samples ${name} ${JSON.stringify(labels)}`);
  return found[0]?.value;
}

export const requests = (method: string, route: string, status: number) => ({
  method,
  route,
  status_code: String(status),
});

export async function scrape(adminUrl: string): Promise<{ text: string; samples: Sample[] }> {
  const res = await httpRequest(`${adminUrl}/metrics`);
  assert.equal(res.status, 200, res.body);
  assert.match(String(res.headers['content-type']), /^text\/plain; version=0\.0\.4; charset=utf-8$/);
  return { text: res.body, samples: parseExposition(res.body) };
}
