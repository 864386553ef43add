// deploy/ha/cluster.sh's settings file, DIR/cluster.env, read the way the
// high-availability guide uses it: sourced by a shell.
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const run = promisify(execFile);

export const CLUSTER_SCRIPT = fileURLToPath(new URL('../../../deploy/ha/cluster.sh', import.meta.url));

/** The variables of a cluster.env as `. FILE` in bash sets them; throws when sourcing it prints anything. */
export async function sourceClusterEnv(file: string): Promise<Record<string, string>> {
  const names = [...readFileSync(file, 'utf8').matchAll(/^([A-Z_][A-Z0-9_]*)=/gm)].map((m) => m[1]!);
  const script = `set -e; . "$1"; shift; for n in "$@"; do printf '%s\\0' "\${!n}"; done`;
  const { stdout, stderr } = await run('bash', ['-c', script, 'bash', file, ...names]);
  if (stderr !== '') throw new Error(`. ${file} printed: ${stderr}`);
  const values = stdout.split('\0');
  return Object.fromEntries(names.map((n, i) => [n, values[i]!]));
}

/** Writes DIR/cluster.env with cluster.sh's own write_env, for a cluster whose ports are `ports`. */
export async function writeClusterEnv(dir: string, ports: Record<string, number>): Promise<void> {
  const assignments = Object.entries(ports).map(([k, v]) => `${k}=${v}`);
  await run('bash', [
    '-c',
    `set -eu; . "$1"; DIR=$2; ${assignments.join(' ')}; write_env "$DIR/cluster.env"`,
    'bash',
    CLUSTER_SCRIPT,
    dir,
  ]);
}

const GUIDE = fileURLToPath(new URL('../../../docs/guides/high-availability.md', import.meta.url));

/**
 * The high-availability guide's "Try it on one machine" lines that read
 * cluster.env (`. DIR/cluster.env`, then `$PATRONICTL ...`), as written but
 * for the cluster in `dir`, run by bash with `path` first on PATH.
 */
export async function runGuideEnvLines(dir: string, path = ''): Promise<{ stdout: string; stderr: string }> {
  const block = /## Try it on one machine\n+```sh\n([^]*?)```/.exec(readFileSync(GUIDE, 'utf8'))?.[1];
  if (!block) throw new Error('the guide has no "Try it on one machine" shell block');
  const guideDir = /cluster\.sh start (\S+)/.exec(block)?.[1];
  const lines = block.split('\n').filter((l) => /^\. .*cluster\.env|^\$PATRONICTL /.test(l));
  if (!guideDir || lines.length !== 2) throw new Error(`unexpected guide block:\n${block}`);
  const script = lines.map((l) => l.replaceAll(guideDir, dir)).join('\n');
  return run('bash', ['-c', script], {
    env: { ...process.env, PATH: path ? `${path}:${process.env.PATH ?? ''}` : (process.env.PATH ?? '') },
  });
}
