// Where `npm test`'s time goes: runs each test file in a process of its own
// (as `npm run test:slow` does), `--jobs` at a time, and prints the files
// from slowest to fastest with their wall time and whether they passed.
// The CPU time of a file's processes (its servers and CLIs included) is
// shown too where /usr/bin/time is installed: on a shared machine it is the
// figure that stays put.
//
//   npm run test:times [-- --jobs N] [dir-or-file ...]
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { parseArgs } from 'node:util';
import { testFiles } from './run-tests.js';

interface Timed {
  file: string;
  seconds: number;
  cpuSeconds: number | undefined;
  passed: boolean;
}

const TIME = '/usr/bin/time';

function timeOne(file: string, scratch: string, i: number): Promise<Timed> {
  const node = [...process.execArgv, '--test', '--test-reporter=dot', '--test-timeout=600000', file];
  const cpuFile = join(scratch, `${i}.time`);
  const withTime = existsSync(TIME);
  const [command, args] = withTime
    ? [TIME, ['-f', '%U %S', '-o', cpuFile, process.execPath, ...node]]
    : [process.execPath, node];
  const started = performance.now();
  return new Promise((resolve) => {
    const child = spawn(command, args, { stdio: 'ignore' });
    child.on('exit', (code) => {
      const seconds = (performance.now() - started) / 1000;
      let cpuSeconds: number | undefined;
      if (withTime) {
        const [user, sys] = readFileSync(cpuFile, 'utf8').trim().split('\n').at(-1)!.split(' ').map(Number);
        cpuSeconds = (user ?? NaN) + (sys ?? NaN);
      }
      resolve({ file: relative(process.cwd(), file), seconds, cpuSeconds, passed: code === 0 });
    });
  });
}

async function main(argv: string[]): Promise<void> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: { jobs: { type: 'string', default: String(Math.max(1, cpus().length)) } },
  });
  const files = (positionals.length > 0 ? positionals : ['dist/test']).flatMap((p) => testFiles(p));
  const scratch = mkdtempSync(join(tmpdir(), 'plant-store-test-times-'));
  const results: Timed[] = [];
  let next = 0;
  const worker = async () => {
    while (next < files.length) {
      const i = next++;
      results.push(await timeOne(files[i]!, scratch, i));
    }
  };
  const started = performance.now();
  await Promise.all(Array.from({ length: Number(values.jobs) }, worker));
  rmSync(scratch, { recursive: true, force: true });
  results.sort((a, b) => b.seconds - a.seconds);
  const sum = (f: (t: Timed) => number) => results.reduce((s, t) => s + f(t), 0);
  console.log(`  wall s   CPU s  file (${files.length} files, ${values.jobs} at a time)`);
  for (const t of results) {
    const cpu = t.cpuSeconds === undefined ? '      -' : t.cpuSeconds.toFixed(1).padStart(7);
    console.log(`${t.seconds.toFixed(1).padStart(8)} ${cpu}  ${t.file}${t.passed ? '' : '  (failed)'}`);
  }
  const cpuSum = results.every((t) => t.cpuSeconds !== undefined)
    ? `, ${sum((t) => t.cpuSeconds!).toFixed(0)} s of CPU`
    : '';
  console.log(
    `${sum((t) => t.seconds).toFixed(0)} s of file time${cpuSum}, ${((performance.now() - started) / 1000).toFixed(0)} s in all`,
  );
  if (results.some((t) => !t.passed)) process.exitCode = 1;
}

await main(process.argv.slice(2));
