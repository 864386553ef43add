// Real processes for the CLI and process-level suites: spawns the built CLI
// (dist/src/cli/bin.js) with an explicit environment, captures its output,
// and makes sure nothing it started outlives the test file.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, afterEach } from './requirements.js';
import { fileURLToPath } from 'node:url';
import { runCliInProcess } from './cli.js';
import { START_NODE_FLAGS } from '../../scripts/npm-start.js';

/** Compiled helpers live in dist/test/helpers/, the CLI executable in dist/src/cli/bin.js. */
export const CLI_PATH = fileURLToPath(new URL('../../src/cli/bin.js', import.meta.url));

export const TOKEN_SHAPE = /^plnt_[A-Za-z0-9_-]{43}$/;
/** A token anywhere in a text (not global: safe with assert.match / doesNotMatch). */
export const TOKEN_ANYWHERE = /plnt_[A-Za-z0-9_-]{43}/;

/** Every token in a text. */
export function tokensIn(text: string): string[] {
  return text.match(new RegExp(TOKEN_ANYWHERE.source, 'g')) ?? [];
}

/** A copy of process.env without the variables the service reads, plus `extra`. */
export function cleanEnv(extra: Record<string, string> = {}): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (v === undefined) continue;
    if (
      ['HOST', 'PORT', 'DATABASE_URL', 'LOG_LEVEL', 'NODE_TEST_CONTEXT'].includes(k) ||
      k.startsWith('PLANTS_') ||
      k.startsWith('OTEL_')
    )
      continue;
    env[k] = v;
  }
  return { ...env, ...extra };
}

/** A scratch directory used as cwd for spawned processes, so a forgotten --db never lands in the repo. */
const scratch = mkdtempSync(join(tmpdir(), 'plant-store-proc-'));

// ---------------------------------------------------------------------------
// Process registry: everything spawned here is SIGKILLed after each test of a
// suite that calls useProcessCleanup(), when the file ends, and on exit.
// Each child maps to the worker pids its log lines named (serve --workers).

const live = new Map<ChildProcess, Set<number>>();

function forceKill(pid: number): void {
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    // already gone
  }
}

function killTree(child: ChildProcess): void {
  child.kill('SIGKILL');
  for (const pid of live.get(child) ?? []) forceKill(pid);
}

/** SIGKILLs every process started by this helper that is still running (and its workers), and waits for them. */
export async function killAllSpawned(): Promise<void> {
  const waits: Promise<unknown>[] = [];
  for (const child of [...live.keys()]) {
    if (child.exitCode === null && child.signalCode === null) {
      waits.push(new Promise((resolve) => child.once('close', resolve)));
      killTree(child);
    }
  }
  await Promise.race([Promise.all(waits), delay(5000)]);
}

/**
 * Call inside a describe(): kills leftovers after each of its tests (and after
 * the suite), even when a test failed, before the suite's store is dropped.
 */
export function useProcessCleanup(): void {
  afterEach(killAllSpawned);
  after(killAllSpawned);
}

after(async () => {
  await killAllSpawned();
  rmSync(scratch, { recursive: true, force: true });
});
process.on('exit', () => {
  for (const child of live.keys()) if (child.exitCode === null && child.signalCode === null) killTree(child);
});

export function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}

// ---------------------------------------------------------------------------
// One-shot CLI runs.

export interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  /** When the process exited (performance.now()). */
  exitedAt: number;
}

/** Runs `plant-store ARGS` to completion (killed after timeoutMs) with a clean environment plus `env`. */
export function runCli(args: string[], env: Record<string, string> = {}, timeoutMs = 20_000): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--enable-source-maps', CLI_PATH, ...args], {
      env: cleanEnv(env),
      cwd: scratch,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    live.set(child, new Set());
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('error', (error) => {
      clearTimeout(timer);
      live.delete(child);
      reject(error);
    });
    child.on('close', (code, signal) => {
      const exitedAt = performance.now();
      clearTimeout(timer);
      live.delete(child);
      if (signal === 'SIGKILL' && code === null) {
        reject(
          new Error(
            `plant-store ${args.join(' ')} did not finish in ${timeoutMs} ms\nstdout: ${stdout}\nstderr: ${stderr}`,
          ),
        );
        return;
      }
      resolve({ code, signal, stdout, stderr, exitedAt });
    });
  });
}

// ---------------------------------------------------------------------------
// Long-running servers.

export interface ServerProcess {
  /** http://127.0.0.1:PORT from the "Server listening at" log line. */
  url: string;
  port: number;
  pid: number;
  /** Everything written so far. */
  readonly stdout: string;
  readonly stderr: string;
  /** stdout parsed as JSON lines (lines that are not JSON are left out). */
  logLines(): Record<string, unknown>[];
  /** Pids of other processes named in the JSON log lines on stdout: the workers of serve --workers. */
  logPids(): Set<number>;
  kill(signal: NodeJS.Signals): void;
  /** Resolves when the process has exited (and its output is complete); rejects after timeoutMs. */
  waitExit(timeoutMs?: number): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  readonly exited: boolean;
  /** Resolves when `predicate` holds for the captured output; rejects after timeoutMs or on exit. */
  waitForOutput(predicate: (stdout: string, stderr: string) => boolean, timeoutMs?: number): Promise<void>;
}

/** What waitForOutput watches: a process's (or an in-process server's) output and exit. */
export interface OutputWatch {
  /** Each is called whenever the output grows or the server exits. */
  watchers: Set<() => void>;
  /** How it exited ("0", "SIGKILL", …), once it has. */
  exited(): string | undefined;
  /** Everything written so far, for error messages. */
  output(): string;
}

/** Resolves when `predicate` holds; rejects after `ms`, or when the server exits first. */
export function waitForOutput(watch: OutputWatch, predicate: () => boolean, ms: number, what: string): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const check = () => {
      const exited = watch.exited();
      if (predicate()) {
        done();
        resolve();
      } else if (exited !== undefined) {
        done();
        reject(new Error(`server exited (${exited}) before ${what}\n${watch.output()}`));
      }
    };
    const timer = setTimeout(() => {
      done();
      reject(new Error(`timed out after ${ms} ms waiting for ${what}\n${watch.output()}`));
    }, ms);
    const done = () => {
      clearTimeout(timer);
      watch.watchers.delete(check);
    };
    watch.watchers.add(check);
    check();
  });
}

/** The JSON lines of a log (lines that are not JSON are left out). */
export function jsonLines(text: string): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  for (const line of text.split('\n')) {
    if (!line.startsWith('{')) continue;
    try {
      out.push(JSON.parse(line) as Record<string, unknown>);
    } catch {
      // a partial last line
    }
  }
  return out;
}

const ADMIN_LINE = /Admin listener \(\/metrics, \/healthz, \/readyz[^)]*\) at (http:\/\/127\.0\.0\.1:\d+)/;

/** The admin listener's URL (--admin-port), from the server's log line. */
export async function adminUrlOf(server: ServerProcess): Promise<string> {
  await server.waitForOutput((out) => ADMIN_LINE.test(out));
  return ADMIN_LINE.exec(server.stdout)![1]!;
}

/** The usual serve arguments: a free port on 127.0.0.1, the given store, log level info. */
/** SIGTERM, then SIGKILL if a server has not exited within 10 s. */
export async function stopGracefully(...servers: (ServerProcess | undefined)[]): Promise<void> {
  await Promise.all(
    servers.map(async (s) => {
      if (!s || s.exited) return;
      s.kill('SIGTERM');
      // An in-process server (helpers/serve-in-process.ts) cannot be killed; its file's end stops it.
      await s.waitExit(10_000).catch(() => s.pid !== process.pid && s.kill('SIGKILL'));
    }),
  );
}

export function serveArgs(db: string, ...extra: string[]): string[] {
  return ['--host', '127.0.0.1', '--port', '0', '--db', db, '--log-level', 'info', ...extra];
}

const LISTENING = /Server listening at (http:\/\/127\.0\.0\.1:(\d+))/;

/**
 * Starts `plant-store serve ARGS` under the Node flags of `npm start` and waits until `listeners` processes logged
 * "Server listening at http://127.0.0.1:PORT" (one per worker with --workers).
 */
export async function startServer(
  args: string[],
  opts: {
    env?: Record<string, string>;
    listeners?: number;
    timeoutMs?: number;
    /** A command that runs node for us (`setpriv --reuid=nobody …` to serve as another user); cwd is then /. */
    prefix?: string[];
  } = {},
): Promise<ServerProcess> {
  const listeners = opts.listeners ?? 1;
  // Generous: on a busy machine (or under coverage) a cluster of workers takes a while to start.
  const timeoutMs = opts.timeoutMs ?? 45_000;
  const [command, ...prefixArgs] = [...(opts.prefix ?? []), process.execPath];
  const node = [...START_NODE_FLAGS, '--enable-source-maps', CLI_PATH, 'serve'];
  const child = spawn(command!, [...prefixArgs, ...node, ...args], {
    env: cleanEnv(opts.env),
    cwd: opts.prefix ? '/' : scratch,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const pids = new Set<number>();
  live.set(child, pids);
  let stdout = '';
  let stderr = '';
  let exitInfo: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  const watchers = new Set<() => void>();
  const notify = () => {
    for (const w of [...watchers]) w();
  };
  let partial = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => {
    stdout += d;
    partial += d;
    const lines = partial.split('\n');
    partial = lines.pop() ?? '';
    for (const line of lines) {
      const pid = /"pid":(\d+)/.exec(line)?.[1];
      if (pid && Number(pid) !== child.pid) pids.add(Number(pid));
    }
    notify();
  });
  child.stderr.setEncoding('utf8').on('data', (d: string) => {
    stderr += d;
    notify();
  });
  const closed = new Promise<void>((resolve) => {
    child.on('close', (code, signal) => {
      exitInfo = { code, signal };
      live.delete(child);
      resolve();
      notify();
    });
  });
  const spawnError = new Promise<never>((_, reject) => child.on('error', reject));
  spawnError.catch(() => {});

  const waitFor = (predicate: () => boolean, ms: number, what: string): Promise<void> =>
    waitForOutput(
      {
        watchers,
        exited: () => exitInfo && String(exitInfo.signal ?? exitInfo.code),
        output: () => `stdout:\n${stdout}\nstderr:\n${stderr}`,
      },
      predicate,
      ms,
      what,
    );

  const listeningUrls = () =>
    stdout
      .split('\n')
      .map((l) => LISTENING.exec(l))
      .filter((m): m is RegExpExecArray => !!m);
  try {
    await Promise.race([
      waitFor(() => listeningUrls().length >= listeners, timeoutMs, `${listeners} "Server listening at" line(s)`),
      spawnError,
    ]);
  } catch (error) {
    killTree(child);
    throw error;
  }
  const first = listeningUrls()[0]!;

  return {
    url: first[1]!,
    port: Number(first[2]),
    pid: child.pid!,
    get stdout() {
      return stdout;
    },
    get stderr() {
      return stderr;
    },
    get exited() {
      return exitInfo !== undefined;
    },
    logLines() {
      return jsonLines(stdout);
    },
    logPids() {
      return new Set(pids);
    },
    kill(signal) {
      if (!exitInfo) child.kill(signal);
    },
    async waitExit(ms = 20_000) {
      await waitFor(() => exitInfo !== undefined, ms, 'the server to exit');
      await closed;
      return exitInfo!;
    },
    waitForOutput(predicate, ms = 10_000) {
      return waitFor(() => predicate(stdout, stderr), ms, 'expected output');
    },
  };
}

// ---------------------------------------------------------------------------
// HTTP over real sockets.

export interface HttpResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

export interface HttpOptions {
  method?: string;
  token?: string;
  headers?: Record<string, string>;
  json?: unknown;
  agent?: http.Agent;
  /** The address to send from (127.0.0.2: another client on loopback). */
  localAddress?: string;
  timeoutMs?: number;
  /**
   * Called when the whole request has been handed to the OS (on loopback: it has reached the server's socket),
   * with whether it went over a kept-alive connection that earlier requests used.
   */
  onFlushed?: (reusedSocket: boolean) => void;
}

/** One request; resolves with the complete response, rejects on any socket error (err.code set) or timeout. */
export function httpRequest(url: string, opts: HttpOptions = {}): Promise<HttpResponse> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { ...opts.headers };
    if (opts.token !== undefined) headers.authorization = `Bearer ${opts.token}`;
    let body: string | undefined;
    if (opts.json !== undefined) {
      body = JSON.stringify(opts.json);
      headers['content-type'] ??= 'application/json';
      headers['content-length'] = String(Buffer.byteLength(body));
    }
    const options = {
      method: opts.method ?? 'GET',
      headers,
      agent: opts.agent ?? false,
      localAddress: opts.localAddress,
    };
    const req = http.request(url, options, (res) => {
      let data = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (data += d));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: data }));
      res.on('error', reject);
      res.on('aborted', () => reject(Object.assign(new Error('response aborted'), { code: 'ECONNRESET' })));
    });
    req.setTimeout(opts.timeoutMs ?? 15_000, () =>
      req.destroy(Object.assign(new Error('request timed out'), { code: 'ETIMEDOUT' })),
    );
    req.on('error', reject);
    const onFlushed = opts.onFlushed;
    if (onFlushed) req.once('finish', () => onFlushed(req.reusedSocket));
    req.end(body);
  });
}

/** Every plant name of the token's owner, following Link rel="next" pages (at most maxPages). */
export async function listAllNames(baseUrl: string, token: string, pageSize = 500, maxPages = 500): Promise<string[]> {
  const names: string[] = [];
  let next: string | undefined = `${baseUrl}/plants?limit=${pageSize}`;
  for (let page = 0; next; page++) {
    if (page >= maxPages) throw new Error(`more than ${maxPages} pages`);
    const res = await httpRequest(next, { token });
    if (res.status !== 200) throw new Error(`GET ${next} answered ${res.status}: ${res.body}`);
    for (const p of JSON.parse(res.body) as { name: string }[]) names.push(p.name);
    const link = res.headers.link;
    const m = typeof link === 'string' ? /<([^>]+)>;\s*rel="next"/.exec(link) : null;
    next = m ? new URL(m[1]!, baseUrl).toString() : undefined;
  }
  return names;
}

/**
 * Creates (or brings up to date) the store with `plant-store migrate`. The token
 * commands refuse a SQLite file that does not exist yet, so suites that start
 * with `token create` call this first.
 */
export async function migrateWithCli(db: string): Promise<void> {
  const r = await runCliInProcess(['migrate', '--db', db]);
  if (r.code !== 0) throw new Error(`migrate failed (${r.code}): ${r.stdout}${r.stderr}`);
}

/** Creates a token with the CLI (in this process) and returns it (asserting the CLI succeeded). */
export async function cliToken(db: string, owner: string, ...extra: string[]): Promise<string> {
  const r = await runCliInProcess(['token', 'create', '--owner', owner, '--db', db, ...extra]);
  if (r.code !== 0 || !TOKEN_SHAPE.test(r.stdout.trim())) {
    throw new Error(`token create failed (${r.code}): ${r.stdout}${r.stderr}`);
  }
  return r.stdout.trim();
}
