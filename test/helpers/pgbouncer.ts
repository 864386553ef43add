// A private PgBouncer in transaction pooling mode, on an ephemeral port of
// 127.0.0.1, in front of the test PostgreSQL (PLANTS_TEST_PG_URL). Every
// database name is passed through, so a suite's fresh database is reachable
// through it as is. PgBouncer refuses to run as root: as root it runs as the
// postgres system user.
import { spawn, type ChildProcess } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { freePort } from './ports.js';

const CANDIDATES = ['/usr/sbin/pgbouncer', '/usr/bin/pgbouncer'];

/** The pgbouncer executable, or undefined when it is not installed. */
export function pgbouncerPath(): string | undefined {
  const onPath = (process.env.PATH ?? '').split(delimiter).map((d) => join(d, 'pgbouncer'));
  return [...CANDIDATES, ...onPath].find((p) => existsSync(p));
}

/** Throws saying what is missing; for requirement() probes. */
export function pgbouncerProbe(): void {
  if (!pgbouncerPath())
    throw new Error('not found in /usr/sbin, /usr/bin or on PATH (install the Debian package pgbouncer)');
  if (process.getuid?.() === 0 && postgresUser() === undefined) {
    throw new Error('running as root, and there is no postgres system user to run pgbouncer as');
  }
}

function postgresUser(): { uid: number; gid: number } | undefined {
  const line = readFileSync('/etc/passwd', 'utf8')
    .split('\n')
    .find((l) => l.startsWith('postgres:'));
  const [, , uid, gid] = line?.split(':') ?? [];
  return uid && gid ? { uid: Number(uid), gid: Number(gid) } : undefined;
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: '127.0.0.1', port }, () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

export interface PgBouncerOptions {
  /** PostgreSQL behind it; host and port are taken from this URL. */
  upstream: string;
  /** Server connections per database and user (PgBouncer's default_pool_size). */
  poolSize?: number;
}

export class PgBouncer {
  #child: ChildProcess | undefined;
  #exited: Promise<void> | undefined;

  private constructor(
    readonly dir: string,
    readonly port: number,
  ) {}

  /** Starts one and waits until it accepts connections. */
  static async start(options: PgBouncerOptions): Promise<PgBouncer> {
    const upstream = new URL(options.upstream);
    const user = decodeURIComponent(upstream.username || 'postgres');
    return PgBouncer.startWith((dir, port) => ({
      userlist: `"${user}" ""\n`,
      ini: [
        '[databases]',
        `* = host=${upstream.hostname || '127.0.0.1'} port=${upstream.port || '5432'}`,
        '[pgbouncer]',
        'listen_addr = 127.0.0.1',
        `listen_port = ${port}`,
        'unix_socket_dir =',
        'auth_type = trust',
        `auth_file = ${join(dir, 'userlist.txt')}`,
        'pool_mode = transaction',
        `default_pool_size = ${options.poolSize ?? 20}`,
        'max_client_conn = 1000',
        `logfile = ${join(dir, 'pgbouncer.log')}`,
        // Short, so a test that kills server connections sees new ones soon.
        'server_login_retry = 1',
        'server_connect_timeout = 3',
        '',
      ].join('\n'),
    }));
  }

  /**
   * Starts one on `files(dir, port)`: its pgbouncer.ini and userlist.txt,
   * written into a new folder `dir`, for a free `port` they must listen on.
   */
  static async startWith(files: (dir: string, port: number) => { ini: string; userlist: string }): Promise<PgBouncer> {
    const dir = mkdtempSync(join(tmpdir(), 'plant-store-pgbouncer-'));
    const port = await freePort();
    const { ini, userlist } = files(dir, port);
    writeFileSync(join(dir, 'userlist.txt'), userlist, { mode: 0o600 });
    writeFileSync(join(dir, 'pgbouncer.ini'), ini);
    if (process.getuid?.() === 0) {
      const { uid, gid } = postgresUser()!;
      for (const f of ['', 'userlist.txt', 'pgbouncer.ini']) chownSync(join(dir, f), uid, gid);
    }
    const bouncer = new PgBouncer(dir, port);
    await bouncer.resume();
    return bouncer;
  }

  /** postgres://user@127.0.0.1:port/<database of `url`>: `url`'s database, through this PgBouncer. */
  urlFor(url: string): string {
    const u = new URL(url);
    u.hostname = '127.0.0.1';
    u.port = String(this.port);
    return u.toString();
  }

  get running(): boolean {
    return this.#child !== undefined;
  }

  /** Starts the process again (on the same port) after stop(). */
  async resume(): Promise<void> {
    if (this.#child) return;
    const executable = pgbouncerPath();
    if (!executable) throw new Error('pgbouncer is not installed');
    const asPostgres = process.getuid?.() === 0 ? postgresUser() : undefined;
    const child = spawn(executable, [join(this.dir, 'pgbouncer.ini')], {
      stdio: ['ignore', 'ignore', 'pipe'],
      ...(asPostgres ?? {}),
    });
    let stderr = '';
    child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    this.#child = child;
    this.#exited = new Promise((resolve) => child.once('exit', () => resolve()));
    let exited = false;
    void this.#exited.then(() => {
      exited = true;
      if (this.#child === child) this.#child = undefined;
    });
    const deadline = Date.now() + 10_000;
    while (!(await accepts(this.port))) {
      if (exited || Date.now() > deadline) {
        child.kill('SIGKILL');
        throw new Error(`pgbouncer did not start on port ${this.port}: ${stderr || this.log().slice(-2000)}`);
      }
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  /** Immediate shutdown (SIGTERM): every client and server connection is closed; the port refuses connections. */
  async stop(): Promise<void> {
    const child = this.#child;
    if (!child) return;
    child.kill('SIGTERM');
    await this.#exited;
    this.#child = undefined;
  }

  /** PgBouncer's own log (connections, errors), for failure messages. */
  log(): string {
    try {
      return readFileSync(join(this.dir, 'pgbouncer.log'), 'utf8');
    } catch {
      return '';
    }
  }

  async destroy(): Promise<void> {
    await this.stop();
    rmSync(this.dir, { recursive: true, force: true });
  }
}
