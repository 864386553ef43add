// `plant-store serve` in this process: main(['serve', ...args], io) with its
// log lines and stderr captured and its signals sent through an emitter. For
// suites where the server's behaviour is under test and the process is not
// (timeouts, logs, admin port, JWT keys); signals to a real process, kill -9,
// --workers and the executable still go through helpers/server.ts.
import { EventEmitter } from 'node:events';
import { Readable, Writable } from 'node:stream';
import { main } from '../../src/cli/main.js';
import { after } from './requirements.js';
import { jsonLines, waitForOutput, type ServerProcess } from './server.js';

class Capture extends Writable {
  text = '';
  constructor(private readonly onText: () => void) {
    super();
  }
  override _write(chunk: Buffer | string, _encoding: BufferEncoding, callback: () => void): void {
    this.text += chunk.toString();
    this.onText();
    callback();
  }
}

const LISTENING = /Server listening at (http:\/\/127\.0\.0\.1:(\d+))/;

/** Servers started here that have not exited; each gets SIGTERM when the file ends. */
const running = new Set<ServerProcess>();
after(async () => {
  await Promise.all(
    [...running].map(async (s) => {
      s.kill('SIGTERM');
      await s.waitExit(10_000).catch(() => {});
    }),
  );
});

/**
 * Starts `plant-store serve ARGS` in this process with exactly the environment
 * `env`, and waits for its "Server listening at" line. kill() takes SIGTERM and
 * SIGINT; a signal that only a process can get (SIGKILL) throws.
 */
export async function serveInProcess(
  args: string[],
  opts: { env?: Record<string, string>; timeoutMs?: number } = {},
): Promise<ServerProcess> {
  const timeoutMs = opts.timeoutMs ?? 20_000;
  const watchers = new Set<() => void>();
  const notify = () => {
    for (const w of [...watchers]) w();
  };
  const stdout = new Capture(notify);
  const stderr = new Capture(notify);
  const signals = new EventEmitter();
  let exitInfo: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  let failure: unknown;
  const exited = main(['serve', ...args], {
    env: { ...opts.env },
    stdin: Readable.from([]),
    stdout,
    stderr,
    isTTY: false,
    signals,
  }).then(
    (code) => {
      exitInfo = { code, signal: null };
      notify();
    },
    (error: unknown) => {
      failure = error;
      exitInfo = { code: null, signal: null };
      notify();
    },
  );

  const waitFor = (predicate: () => boolean, ms: number, what: string): Promise<void> =>
    waitForOutput(
      {
        watchers,
        exited: () => exitInfo && `${exitInfo.code}${failure ? `, ${String(failure)}` : ''}`,
        output: () => `stdout:\n${stdout.text}\nstderr:\n${stderr.text}`,
      },
      predicate,
      ms,
      what,
    );

  const server: ServerProcess = {
    url: '',
    port: 0,
    pid: process.pid,
    get stdout() {
      return stdout.text;
    },
    get stderr() {
      return stderr.text;
    },
    get exited() {
      return exitInfo !== undefined;
    },
    logLines() {
      return jsonLines(stdout.text);
    },
    logPids() {
      return new Set();
    },
    kill(signal) {
      if (signal !== 'SIGTERM' && signal !== 'SIGINT') throw new Error(`an in-process server cannot get ${signal}`);
      if (!exitInfo) signals.emit(signal, signal);
    },
    async waitExit(ms = 20_000) {
      await waitFor(() => exitInfo !== undefined, ms, 'the server to exit');
      await exited;
      running.delete(server);
      return exitInfo!;
    },
    waitForOutput(predicate, ms = 10_000) {
      return waitFor(() => predicate(stdout.text, stderr.text), ms, 'expected output');
    },
  };
  running.add(server);
  await waitFor(() => LISTENING.test(stdout.text), timeoutMs, 'a "Server listening at" line');
  const [, url, port] = LISTENING.exec(stdout.text)!;
  return Object.assign(server, { url: url!, port: Number(port) });
}
