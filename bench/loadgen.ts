// The orchestrator's handle on one load generator child (see load.ts): one
// per server under test, alive for the whole scenario.
import type { ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { spawnTracked, stopChild } from './children.js';
import type { LoadSpec, RoundCommand, RoundResult } from './load-types.js';
import { LOAD_MAIN } from './paths.js';
import type { Pinning } from './pinning.js';

// Beyond the round itself: autocannon's connect and its last timeouts.
const SLACK_MS = 30_000;

export class LoadGenerator {
  readonly #child: ChildProcess;
  readonly #lines: AsyncIterator<string>;
  #stderr = '';

  private constructor(child: ChildProcess) {
    this.#child = child;
    this.#lines = createInterface({ input: child.stdout! })[Symbol.asyncIterator]();
    child.stderr!.setEncoding('utf8').on('data', (d: string) => (this.#stderr = (this.#stderr + d).slice(-4000)));
  }

  static start(spec: LoadSpec, token: string, pinning: Pinning): LoadGenerator {
    const [command, args] = pinning.wrap(pinning.loadCpus, process.execPath, [LOAD_MAIN, JSON.stringify(spec)]);
    const child = spawnTracked(command, args, {
      stdio: ['pipe', 'pipe', 'pipe'],
      env: { ...process.env, BENCH_TOKEN: token },
    });
    return new LoadGenerator(child);
  }

  async run(durationS: number): Promise<RoundResult> {
    const command: RoundCommand = { durationS };
    this.#child.stdin!.write(`${JSON.stringify(command)}\n`);
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`load generator gave no result within ${durationS} s + ${SLACK_MS / 1000} s`)),
        durationS * 1000 + SLACK_MS,
      );
    });
    try {
      const next = await Promise.race([this.#lines.next(), timeout]);
      if (next.done || !next.value.startsWith('{')) {
        throw new Error(`load generator failed: ${this.#stderr.trim() || next.value || 'no output'}`);
      }
      return JSON.parse(next.value) as RoundResult;
    } finally {
      clearTimeout(timer);
    }
  }

  async close(): Promise<void> {
    this.#child.stdin!.end();
    await stopChild(this.#child, 2000);
  }
}
