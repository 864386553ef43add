// The test runner behind `npm test` and `npm run test:slow`: finds the compiled
// test files under the paths it is given (every folder below, so a new feature
// folder needs no new glob), and hands them to `node --test` with the flags it
// was given.
//
// Each `node --test` file is a process, and a process spends about a second of
// CPU importing the service before its first test; the suite is CPU-bound on
// two cores, so by default the files of one folder run in a few shared
// processes (groups of at most GROUP_SIZE files, imported one after the other).
// `--isolated` gives every file its own process, for the slow checks that
// start clusters and kill processes.
//
//   node dist/scripts/run-tests.js [--isolated] [--test-... flags] [dir-or-file ...]
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { pathToFileURL } from 'node:url';

/** At most this many files share a process. */
const GROUP_SIZE = 6;

/** Folders that hold no test files of their own suite: code shared by tests, and the slow checks. */
const SKIPPED_FOLDERS = new Set(['helpers', 'slow']);

/** The *.test.js files under `path`, sorted; below `path`, helpers/ and slow/ only when `path` is inside them. */
export function testFiles(path: string): string[] {
  if (statSync(path).isFile()) return [path];
  const inside = (name: string) => resolve(path).split(sep).includes(name);
  const found: string[] = [];
  for (const entry of readdirSync(path, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
    const full = join(path, entry.name);
    if (entry.isDirectory()) {
      if (!SKIPPED_FOLDERS.has(entry.name) || inside(entry.name)) found.push(...testFiles(full));
    } else if (entry.name.endsWith('.test.js')) found.push(full);
  }
  return found;
}

/** The files in groups of at most `size`, one folder per group, larger folders split evenly. */
export function groupsOf(files: string[], size: number): string[][] {
  const byFolder = new Map<string, string[]>();
  for (const f of files) byFolder.set(dirname(f), [...(byFolder.get(dirname(f)) ?? []), f]);
  const groups: string[][] = [];
  for (const folderFiles of byFolder.values()) {
    const count = Math.ceil(folderFiles.length / size);
    // Round robin, so that neighbours (often the same feature's heavy files) land in different groups.
    for (let g = 0; g < count; g++) groups.push(folderFiles.filter((_, i) => i % count === g));
  }
  return groups;
}

/**
 * The module that runs `files` in one process. Its first test holds the
 * others back until every file is imported: without it, the tests of the
 * first files would run while a later one still awaits its top-level work
 * (a requirement probe), and the process's root-level after() hooks (which
 * remove scratch folders, stop leftover servers) would run before the later
 * files' tests. An import that throws fails that test, naming the file.
 */
export function groupEntry(files: string[]): string {
  const names = files.map((f) => relative(resolve('dist/test'), f));
  return `import { test } from 'node:test';
let loaded;
let failed;
const loading = new Promise((resolve, reject) => ((loaded = resolve), (failed = reject)));
test(${JSON.stringify(`imports ${names.join(', ')}`)}, () => loading);
let file = '';
try {
${files.map((f) => `  file = ${JSON.stringify(relative(resolve('dist/test'), f))};\n  await import(${JSON.stringify(pathToFileURL(f).href)});`).join('\n')}
  loaded();
} catch (error) {
  failed(new Error(\`\${file} failed to load\`, { cause: error }));
}
`;
}

function main(argv: string[]): void {
  const flags = argv.filter((a) => a.startsWith('--') && a !== '--isolated');
  const paths = argv.filter((a) => !a.startsWith('--'));
  const files = (paths.length > 0 ? paths : ['dist/test']).flatMap((p) => testFiles(p));
  if (files.length === 0) throw new Error(`no *.test.js files under ${paths.join(' ') || 'dist/test'}`);

  let entries = files;
  let scratch: string | undefined;
  if (!argv.includes('--isolated')) {
    scratch = mkdtempSync(join(tmpdir(), 'plant-store-test-groups-'));
    const dir = scratch;
    // Larger groups first (by bytes of test code, a rough measure of their time), so that the longest do not start last.
    const weight = (group: string[]) => group.reduce((sum, f) => sum + statSync(f).size, 0);
    const groups = groupsOf(files, GROUP_SIZE).sort((a, b) => weight(b) - weight(a));
    entries = groups.map((group, i) => {
      // Named for its first file, so that a group that fails as a whole can be found.
      const first = relative(process.cwd(), group[0]!)
        .replace(/^dist[/\\]test[/\\]/, '')
        .replace(/\.test\.js$/, '');
      const entry = join(
        dir,
        `${String(i + 1).padStart(2, '0')}-${first.replaceAll(sep, '-')}-and-${group.length - 1}-more.js`,
      );
      writeFileSync(entry, groupEntry(group.map((f) => resolve(f))));
      return entry;
    });
  }

  const child = spawn(process.execPath, [...process.execArgv, '--test', ...flags, ...entries], { stdio: 'inherit' });
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => child.kill(signal));
  child.on('exit', (code, signal) => {
    if (scratch !== undefined) rmSync(scratch, { recursive: true, force: true });
    process.exitCode = code ?? (signal === null ? 1 : 128);
  });
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) main(process.argv.slice(2));
