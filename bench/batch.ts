// npm run bench:batch [-- --pg URL] [-- --seconds N] [-- --size N]
// Batch create against single creates, on the service as installed (`plant-store serve`, durability full), with wrk:
// POST /plants with one plant per request, then with arrays of --size plants, on SQLite and (with --pg) PostgreSQL.
// Prints requests/s and plants/s of each, and the batch's plants/s as a multiple of the single creates'.
import * as fs from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { LOAD_CPU, SERVER_CPU, freePort, ready, result, start, stop } from './procs.js';
import { preload, scratchDatabase } from './stores.js';

const { values: o } = parseArgs({
  options: {
    pg: { type: 'string' },
    seconds: { type: 'string', default: '5' },
    size: { type: 'string', default: '100' },
    connections: { type: 'string', default: '32' },
  },
});
const [seconds, size, connections] = [o.seconds, o.size, o.connections].map(Number) as [number, number, number];
const bin = fileURLToPath(new URL('../src/cli/bin.js', import.meta.url));
const dir = fs.mkdtempSync(join(tmpdir(), 'plant-bench-batch-'));

/** wrk's script: each request creates `per` new plants (one object when 1, else an array). */
function script(token: string, per: number, firstId: number): string {
  return `
local nextId = ${firstId}
local headers = { Authorization = "Bearer ${token}", ["Content-Type"] = "application/json" }
local function plant()
  nextId = nextId + 1
  return string.format('{"id":%d,"name":"plant-%d","tag":"fern"}', nextId, nextId)
end
function request()
  if ${per} == 1 then return wrk.format("POST", "/plants", headers, plant()) end
  local parts = {}
  for i = 1, ${per} do parts[i] = plant() end
  return wrk.format("POST", "/plants", headers, "[" .. table.concat(parts, ",") .. "]")
end
function done(s, latency, requests)
  local e = s.errors
  io.write(string.format('\\nRESULT {"requests":%d,"seconds":%f,"errors":%d,"p99Ms":%f}\\n',
    s.requests, s.duration / 1e6, e.connect + e.read + e.write + e.status + e.timeout, latency:percentile(99) / 1000))
end
`;
}

interface Rate {
  requests: number;
  seconds: number;
  errors: number;
  p99Ms: number;
}

async function load(url: string, token: string, per: number, firstId: number, conns: number): Promise<Rate> {
  const file = join(dir, `load-${per}-${firstId}.lua`);
  fs.writeFileSync(file, script(token, per, firstId));
  const args = ['-t1', `-c${conns}`, `-d${seconds}s`, '--timeout', '20s', '-s', file, url];
  const read = (out: string) => /^RESULT (\{.*\})$/m.exec(out)?.[1];
  return JSON.parse(await result(start(LOAD_CPU, 'wrk', args), 'wrk', read)) as Rate;
}

async function measure(kind: string, db: string, token: string): Promise<string[]> {
  const port = await freePort();
  const child = start(
    SERVER_CPU,
    bin,
    ['serve', '--port', String(port), '--db', db, '--log-level', 'warn'],
    join(dir, `${kind}.log`),
  );
  try {
    const url = `http://127.0.0.1:${port}`;
    await ready(child, `${url}/plants?limit=1`, token, 'the service');
    // Warm both paths up, then measure each.
    await load(url, token, 1, 1e9, connections);
    await load(url, token, size, 2e9, connections);
    const one = await load(url, token, 1, 3e9, connections);
    const many = await load(url, token, size, 4e9, Math.max(1, Math.ceil(connections / 4)));
    const line = (what: string, r: Rate, per: number) =>
      `| ${kind} | ${what} | ${(r.requests / r.seconds).toFixed(0)} | ${((r.requests * per) / r.seconds).toFixed(0)} | ${r.p99Ms.toFixed(1)} | ${r.errors} |`;
    const ratio = (many.requests * size) / many.seconds / (one.requests / one.seconds);
    return [
      line(`1 plant per request, ${connections} connections`, one, 1),
      line(`${size} plants per request, ${Math.max(1, Math.ceil(connections / 4))} connections`, many, size),
      `| ${kind} | batch plants/s ÷ single plants/s | | ${ratio.toFixed(1)}× | | |`,
    ];
  } finally {
    await stop(child);
  }
}

const rows = ['| store | requests | req/s | plants/s | p99 ms | errors |', '|---|---|---|---|---|---|'];
try {
  const sqlite = join(dir, 'plants.db');
  const [token] = await preload(sqlite, 1, 0);
  rows.push(...(await measure('sqlite', sqlite, token!)));
  if (o.pg) {
    const pg = await scratchDatabase(o.pg, 1, 0);
    try {
      rows.push(...(await measure('postgres', pg.url, pg.tokens[0]!)));
    } finally {
      await pg.drop();
    }
  }
  console.log(rows.join('\n'));
} finally {
  fs.rmSync(dir, { recursive: true, force: true });
}
