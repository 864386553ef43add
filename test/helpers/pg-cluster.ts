// A private PostgreSQL cluster in a temp dir on an ephemeral port, for tests
// that stop and start the database under load (never the shared server).
// initdb refuses to run as root, so as root the cluster belongs to the
// postgres system user.
import { execFile } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePort } from './ports.js';

const run = promisify(execFile);
const BIN = ['/usr/lib/postgresql/15/bin', '/usr/lib/postgresql/16/bin', '/usr/lib/postgresql/17/bin'].find((d) =>
  existsSync(join(d, 'initdb')),
);

/** Why a private cluster cannot be made here, or undefined when it can. */
export function privateClusterProblem(): string | undefined {
  if (!BIN) return 'no initdb under /usr/lib/postgresql/*/bin (Debian package postgresql)';
  if (process.getuid?.() === 0 && !existsSync('/usr/sbin/runuser')) return 'running as root without runuser';
  return undefined;
}

export class PrivateCluster {
  private constructor(
    readonly dir: string,
    readonly port: number,
  ) {}

  get url(): string {
    return `postgres://postgres@127.0.0.1:${this.port}/postgres`;
  }

  static async create(): Promise<PrivateCluster> {
    const dir = mkdtempSync(join(tmpdir(), 'plant-store-pg-'));
    if (process.getuid?.() === 0) chownSync(dir, 101, 104);
    const cluster = new PrivateCluster(dir, await freePort());
    await cluster.#pg('initdb', ['-D', join(dir, 'data'), '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-sync']);
    await cluster.start();
    return cluster;
  }

  async #pg(tool: string, args: string[]): Promise<void> {
    const command = join(BIN!, tool);
    if (process.getuid?.() === 0) await run('/usr/sbin/runuser', ['-u', 'postgres', '--', command, ...args]);
    else await run(command, args);
  }

  start(): Promise<void> {
    const options = `-p ${this.port} -c listen_addresses=127.0.0.1 -k ${this.dir} -c fsync=on`;
    return this.#pg('pg_ctl', [
      '-D',
      join(this.dir, 'data'),
      '-l',
      join(this.dir, 'log'),
      '-o',
      options,
      '-w',
      'start',
    ]);
  }

  /** mode 'immediate' is a crash: no checkpoint, recovery from the WAL on the next start. */
  stop(mode: 'fast' | 'immediate' = 'fast'): Promise<void> {
    return this.#pg('pg_ctl', ['-D', join(this.dir, 'data'), '-m', mode, '-w', 'stop']);
  }

  async destroy(): Promise<void> {
    await this.stop('immediate').catch(() => {});
    rmSync(this.dir, { recursive: true, force: true });
  }
}
