// The three-node Patroni cluster of deploy/ha/cluster.sh, driven from tests:
// started and stopped by that script, observed through Patroni's REST API,
// and broken the way machines break (kill -9 by PID).
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { commandProbe } from '../helpers/requirements.js';
import { pgbouncerProbe } from '../helpers/pgbouncer.js';
import { CLUSTER_SCRIPT, sourceClusterEnv } from '../helpers/cluster-env.js';

export { CLUSTER_SCRIPT };

const run = promisify(execFile);

const PG_BIN = process.env.PG_BIN ?? '/usr/lib/postgresql/15/bin';

/** Throws saying what is missing to run the cluster here. */
export async function haProbe(): Promise<void> {
  for (const tool of ['patroni', 'patronictl', 'etcd', 'envsubst', 'curl'])
    await commandProbe(tool)().catch(() => {
      throw new Error(`${tool} is not on PATH (Debian packages patroni, etcd-server, gettext-base, curl)`);
    });
  if (!existsSync('/usr/sbin/haproxy')) await commandProbe('haproxy')();
  if (!existsSync(`${PG_BIN}/postgres`)) throw new Error(`no PostgreSQL server in ${PG_BIN} (set PG_BIN)`);
  if (process.getuid?.() === 0) await commandProbe('setpriv')();
  pgbouncerProbe();
}

export interface Member {
  name: string;
  role: string;
  state: string;
}

async function getJson(url: string): Promise<{ status: number; body: unknown }> {
  const res = await fetch(url, { signal: AbortSignal.timeout(2000) });
  const text = await res.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    /* not JSON */
  }
  return { status: res.status, body };
}

export class HaCluster {
  private constructor(
    readonly dir: string,
    readonly env: Record<string, string>,
  ) {}

  /** deploy/ha/cluster.sh start DIR (DIR must not exist). */
  static async start(dir: string): Promise<HaCluster> {
    await run(CLUSTER_SCRIPT, ['start', dir], { timeout: 150_000 });
    return new HaCluster(dir, await sourceClusterEnv(`${dir}/cluster.env`));
  }

  /** postgres:// URL of the primary through HAProxy. */
  get url(): string {
    return this.env.PLANTS_HA_URL!;
  }

  restPort(node: number): number {
    return Number(this.env[`NODE${node}_REST_PORT`]);
  }

  /** The members as Patroni reports them, asked of any node that answers. */
  async members(): Promise<Member[]> {
    for (const node of [1, 2, 3]) {
      try {
        const { body } = await getJson(`http://127.0.0.1:${this.restPort(node)}/cluster`);
        return (body as { members: Member[] }).members;
      } catch {
        /* that node is down: ask the next */
      }
    }
    return [];
  }

  /** The node number (1-3) holding the given role ('leader', 'sync_standby', 'replica'). */
  async nodeWithRole(role: string): Promise<number | undefined> {
    const member = (await this.members()).find((m) => m.role === role);
    return member ? Number(member.name.replace('node', '')) : undefined;
  }

  /** Waits until a running member holds `role`; returns its node number. */
  async waitForRole(role: string, timeoutMs = 60_000): Promise<number> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      const node = await this.nodeWithRole(role);
      if (node !== undefined) return node;
      await new Promise((r) => setTimeout(r, 250));
    }
    throw new Error(`no member became ${role} within ${timeoutMs} ms: ${JSON.stringify(await this.members())}`);
  }

  /** Waits until a leader, a synchronous standby and a third running member are there. */
  async waitHealthy(timeoutMs = 120_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    let last: Member[] = [];
    while (Date.now() < deadline) {
      last = await this.members();
      const running = last.filter((m) => m.state === 'running' || m.state === 'streaming');
      const roles = running.map((m) => m.role).sort();
      if (running.length === 3 && roles.includes('leader') && roles.includes('sync_standby')) return;
      await new Promise((r) => setTimeout(r, 500));
    }
    throw new Error(`the cluster did not become healthy within ${timeoutMs} ms: ${JSON.stringify(last)}`);
  }

  patroniPid(node: number): number {
    return Number(readFileSync(`${this.dir}/node${node}.pid`, 'utf8').trim());
  }

  /** The process group of node N's PostgreSQL: its postmaster and every backend. */
  postgresGroup(node: number): number {
    const postmaster = Number(readFileSync(`${this.dir}/node${node}/data/postmaster.pid`, 'utf8').split('\n')[0]);
    // /proc/PID/stat: "pid (comm) state ppid pgrp ...": comm may hold spaces, so split after ')'.
    const stat = readFileSync(`/proc/${postmaster}/stat`, 'utf8');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[2]);
  }

  /** kill -9 of node N's PostgreSQL (postmaster and backends); its Patroni lives on. */
  crashPostgres(node: number): void {
    process.kill(-this.postgresGroup(node), 'SIGKILL');
  }

  /** kill -9 of the whole node: Patroni and its PostgreSQL. */
  killNode(node: number): void {
    const group = this.postgresGroup(node);
    process.kill(this.patroniPid(node), 'SIGKILL');
    process.kill(-group, 'SIGKILL');
  }

  /** Starts a killed node again (cluster.sh start-node); it rejoins as a replica. */
  async startNode(node: number): Promise<void> {
    await run(CLUSTER_SCRIPT, ['start-node', this.dir, String(node)], { timeout: 30_000 });
  }

  /** patronictl switchover from the leader to `candidate`, now. */
  async switchover(leader: number, candidate: number): Promise<void> {
    await run(
      'patronictl',
      [
        '-c',
        `${this.dir}/node1/patroni.yml`,
        'switchover',
        '--leader',
        `node${leader}`,
        '--candidate',
        `node${candidate}`,
        '--force',
      ],
      { timeout: 60_000 },
    );
  }

  /** deploy/ha/cluster.sh stop DIR: stops what start started, by PID. */
  async stop(): Promise<void> {
    await run(CLUSTER_SCRIPT, ['stop', this.dir], { timeout: 60_000 });
  }
}
