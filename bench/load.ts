// The load generator: wrk (a C client driven by a Lua script), in its own process on the load CPU. It sends the
// scenario's workload for a while and prints a RESULT line (LoadResult).
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { shares, type Workload } from './scenarios.js';
import { LOAD_CPU, result, start } from './procs.js';

/** Created plants' ids start above `firstId`; paging starts from the `seeds` cursors ('' = the first page). */
export interface LoadSpec {
  url: string;
  connections: number;
  seconds: number;
  workload: Workload;
  tokens: string[];
  firstId: number;
  seeds: string[];
}

/** `errors`: non-2xx answers, socket errors and timeouts; `cpuSeconds`: the load generator's own CPU time. */
export type LoadResult = { requests: number; seconds: number; errors: number; p99Ms: number; cpuSeconds: number };

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
  return wrk.format("GET", "/plants?limit=" .. limit .. (c ~= "" and "&cursor=" .. c or ""), auth[1])
end
function response(status, headers, body)
  local link = headers["link"] or headers["Link"]
  if link then chains[#chains + 1] = link:match("cursor=([^>&]+)") end
end`;
  const mixed = `
local function send()
  local r, t = math.random(), math.random(#tokens)
  if r < ${pList} then return lists[t] end
  if r < ${pCreate} or tail - head < 1000 then
    nextId, tail = nextId + 1, tail + 1
    qt[tail], qi[tail] = t, nextId
    local tag = nextId % 2 == 0 and ',"tag":"fern"' or ""
    return wrk.format("POST", "/plants", json[t], string.format('{"id":%d,"name":"plant-%d"%s}', nextId, nextId, tag))
  end
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
    lists[i] = wrk.format("GET", "/plants?limit=" .. limit, auth[i])
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

export async function runLoad(spec: LoadSpec, file: string): Promise<LoadResult> {
  writeFileSync(file, wrkScript(spec));
  const args = ['-t1', `-c${spec.connections}`, `-d${spec.seconds}s`, '--timeout', '10s', '-s', file, spec.url];
  const read = (out: string) => /^RESULT (\{.*\})$/m.exec(out)?.[1];
  return JSON.parse(await result(start(LOAD_CPU, 'wrk', args), 'wrk', read)) as LoadResult;
}
