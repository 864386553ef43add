// Load generators: wrk (a C client driven by a Lua script) when installed,
// autocannon (Node) otherwise. Either runs in its own process on the load
// CPU, sends the scenario's workload for a while and reports what it saw.
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { shares, type Workload } from './scenarios.js';
import { LOAD_CPU, output, start } from './procs.js';

export interface LoadSpec {
  url: string;
  connections: number;
  seconds: number;
  workload: Workload;
  tokens: string[];
  /** Ids of created plants start above this. */
  firstId: number;
  /** Cursors to start paging from ('' = the first page). */
  seeds: string[];
}

export interface LoadResult {
  requests: number;
  seconds: number;
  /** Non-2xx answers, socket errors and timeouts. */
  errors: number;
  p99Ms: number;
  /** CPU seconds the load generator used. */
  cpuSeconds: number;
}

// wrk -v prints its version (and exits 1).
export const wrkVersion = /^wrk (\S+)/.exec(String(spawnSync('wrk', ['-v']).stdout ?? ''))?.[1];

const lua = (v: unknown) => JSON.stringify(v).replace(/^\[/, '{').replace(/\]$/, '}');

/** The wrk script: random owner per request, ops by share; done() prints the result as JSON. */
export function wrkScript(spec: LoadSpec): string {
  const [pList, pCreate] = spec.workload.page ? [0, 0] : shares(spec.workload);
  const paging = `
local function send()
  local c = table.remove(chains)
  if c == nil then seedAt = seedAt % #seeds + 1; c = seeds[seedAt] end
  local path = "/plants?limit=" .. limit
  if c ~= "" then path = path .. "&cursor=" .. c end
  return wrk.format("GET", path, auth[1])
end
function response(status, headers, body)
  local link = headers["link"] or headers["Link"]
  if link then chains[#chains + 1] = link:match("cursor=([^>&]+)") end
end`;
  const mixed = `
local function create(t)
  nextId = nextId + 1
  local id = nextId
  local body = string.format('{"id":%d,"name":"plant-%d"}', id, id)
  if id % 2 == 0 then body = string.format('{"id":%d,"name":"plant-%d","tag":"fern"}', id, id) end
  tail = tail + 1; qt[tail] = t; qi[tail] = id
  return wrk.format("POST", "/plants", json[t], body)
end
local function send()
  local r, t = math.random(), math.random(#tokens)
  if r < ${pList} then return lists[t] end
  if r < ${pCreate} or tail - head < 1000 then return create(t) end
  t, head = qt[head], head + 1
  return wrk.format("DELETE", string.format("/plants/%d", qi[head - 1]), auth[t])
end`;
  return `
local tokens, seeds, limit = ${lua(spec.tokens)}, ${lua(spec.seeds)}, ${spec.workload.limit}
local nextId, head, tail, seedAt = ${spec.firstId}, 1, 0, 0
local auth, json, lists, qt, qi, chains = {}, {}, {}, {}, {}, {}
function init(args)
  math.randomseed(${spec.firstId % 1e6})
  for i, t in ipairs(tokens) do
    auth[i] = { Authorization = "Bearer " .. t }
    json[i] = { Authorization = "Bearer " .. t, ["Content-Type"] = "application/json" }
    lists[i] = wrk.format("GET", "/plants?limit=" .. limit, { Authorization = "Bearer " .. t })
  end
end
${spec.workload.page ? paging : mixed}
-- wrk calls request() once before the run to check it, and never sends that one.
function request()
  request = send
  return wrk.format("GET", "/plants?limit=1", auth[1])
end
function done(s, latency, requests)
  local e = s.errors
  io.write(string.format('\\nRESULT {"requests":%d,"seconds":%f,"errors":%d,"p99Ms":%f,"cpuSeconds":%f}\\n',
    s.requests, s.duration / 1e6, e.connect + e.read + e.write + e.status + e.timeout,
    latency:percentile(99) / 1000, os.clock()))
end
`;
}

async function collect(child: ReturnType<typeof start>, what: string): Promise<LoadResult> {
  const [code, out] = await output(child);
  const json = /^RESULT (\{.*\})$/m.exec(out)?.[1];
  if (code === 0 && json) return JSON.parse(json) as LoadResult;
  throw new Error(`${what} failed (exit ${code}): ${out.slice(-2000)}`);
}

export function runLoad(spec: LoadSpec, tool: 'wrk' | 'autocannon', tmpFile: string): Promise<LoadResult> {
  if (tool === 'wrk') {
    writeFileSync(tmpFile, wrkScript(spec));
    const args = ['-t1', `-c${spec.connections}`, `-d${spec.seconds}s`, '--timeout', '10s', '-s', tmpFile, spec.url];
    return collect(start(LOAD_CPU, 'wrk', args), 'wrk');
  }
  writeFileSync(tmpFile, JSON.stringify(spec));
  const script = fileURLToPath(new URL('./autocannon-load.js', import.meta.url));
  return collect(start(LOAD_CPU, process.execPath, [script, tmpFile]), 'autocannon');
}
