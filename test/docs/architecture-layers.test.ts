// The layering of ARCHITECTURE.md, checked over the import graph of src/:
// a module imports only from its own layer or the layers below it.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { describe, it } from '../helpers/requirements.js';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const SRC = join(ROOT, 'src');
// The client's own package; src/client re-exports it as plant-store/client.
const CLIENT_PACKAGE = join(ROOT, 'packages', 'client', 'src');

// Lowest first, as the layer table of ARCHITECTURE.md lists them: a row
// "| 1 | `config.ts`, `config/` | ..." puts those files and folders in layer 1.
// A top-level folder of src/ (or a file directly in it) not listed there fails
// the test, so a new layer has to be placed on purpose, and the map kept true.
function layersOfArchitecture(): string[][] {
  const text = readFileSync(join(ROOT, 'ARCHITECTURE.md'), 'utf8');
  const layers: string[][] = [];
  for (const m of text.matchAll(/^\| (\d+) \| ([^|]+) \|/gm)) {
    layers[Number(m[1])] = [...m[2]!.matchAll(/`([^`]+)`/g)].map((n) => n[1]!.replace(/\/$/, ''));
  }
  return layers;
}
const LAYERS: readonly (readonly string[])[] = layersOfArchitecture();
// The client runs in browsers too: it may import only itself, and schemas for their types.
const CLIENT = 'client';

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sourceFiles(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : [],
  );
}

interface Import {
  specifier: string;
  typeOnly: boolean;
}

function importsOf(file: string): Import[] {
  const text = readFileSync(file, 'utf8');
  const found: Import[] = [];
  for (const m of text.matchAll(/^\s*(import|export)\s+(type\s+)?[^'"]*?\bfrom\s+'([^']+)'/gm)) {
    found.push({ specifier: m[3]!, typeOnly: m[2] !== undefined });
  }
  for (const m of text.matchAll(/^\s*import\s+'([^']+)'/gm)) found.push({ specifier: m[1]!, typeOnly: false });
  for (const m of text.matchAll(/\bimport\(\s*'([^']+)'\s*\)/g)) found.push({ specifier: m[1]!, typeOnly: false });
  for (const m of text.matchAll(/new URL\(\s*'(\.[^']+)'\s*,\s*import\.meta\.url\)/g)) {
    found.push({ specifier: m[1]!, typeOnly: false });
  }
  return found;
}

const part = (file: string): string => relative(SRC, file).split(sep)[0]!;

function layerOf(file: string): number {
  const index = LAYERS.findIndex((layer) => layer.includes(part(file)));
  assert.notEqual(index, -1, `${relative(ROOT, file)} is in no layer of ARCHITECTURE.md`);
  return index;
}

describe('architecture', () => {
  const files = sourceFiles(SRC);

  it('finds the source tree', () => {
    assert.ok(files.length > 20, `only ${files.length} files under ${SRC}`);
  });

  it('reads every layer from ARCHITECTURE.md', () => {
    assert.ok(LAYERS.length >= 9, `${LAYERS.length} layers`);
    for (const [index, layer] of LAYERS.entries()) assert.ok(layer && layer.length > 0, `layer ${index} is empty`);
    assert.ok(LAYERS[1]!.includes('config'), LAYERS[1]!.join(', '));
  });

  it('imports only point down the layers', () => {
    const upward: string[] = [];
    for (const file of files) {
      if (part(file) === CLIENT) continue;
      const from = layerOf(file);
      for (const { specifier } of importsOf(file)) {
        if (!specifier.startsWith('.')) continue;
        const target = resolve(dirname(file), specifier).replace(/\.js$/, '.ts');
        if (part(target) === CLIENT) {
          upward.push(`${relative(ROOT, file)} imports the client (${specifier})`);
          continue;
        }
        if (layerOf(target) > from) upward.push(`${relative(ROOT, file)} imports ${specifier} from a higher layer`);
      }
    }
    assert.deepEqual(upward, []);
  });

  // One thread serves every request of a process: a wait on purpose (for
  // another thread's answer) stalls all of them, so answers are awaited.
  it('never blocks the serving thread on purpose: no Atomics.wait', () => {
    const blocking = files.filter((file) => /\bAtomics\s*\.\s*wait\s*\(/.test(readFileSync(file, 'utf8')));
    assert.deepEqual(
      blocking.map((file) => relative(ROOT, file)),
      [],
    );
  });

  it('has no import cycles, type-only imports included', () => {
    const edges = new Map<string, string[]>();
    for (const file of files) {
      const targets = importsOf(file)
        .filter(({ specifier }) => specifier.startsWith('.'))
        .map(({ specifier }) => resolve(dirname(file), specifier).replace(/\.js$/, '.ts'));
      edges.set(file, targets);
    }
    const cycles: string[] = [];
    const state = new Map<string, 'open' | 'done'>();
    const visit = (file: string, path: string[]): void => {
      if (state.get(file) === 'done') return;
      if (state.get(file) === 'open') {
        const loop = [...path.slice(path.indexOf(file)), file];
        cycles.push(loop.map((f) => relative(SRC, f)).join(' -> '));
        return;
      }
      state.set(file, 'open');
      for (const target of edges.get(file) ?? []) visit(target, [...path, file]);
      state.set(file, 'done');
    };
    for (const file of files) visit(file, []);
    assert.deepEqual(cycles, []);
  });

  it('keeps the client free of Node modules and of the server', () => {
    const wrong: string[] = [];
    for (const file of sourceFiles(CLIENT_PACKAGE)) {
      for (const { specifier } of importsOf(file)) {
        const inside = specifier.startsWith('.') && resolve(dirname(file), specifier).startsWith(CLIENT_PACKAGE + sep);
        if (!inside) wrong.push(`${relative(ROOT, file)} imports ${specifier}: the client package imports only itself`);
      }
    }
    for (const file of files.filter((f) => part(f) === CLIENT)) {
      for (const { specifier, typeOnly } of importsOf(file)) {
        const name = relative(ROOT, file);
        if (specifier.startsWith('node:')) wrong.push(`${name} imports ${specifier}`);
        else if (specifier.startsWith('.')) {
          const path = resolve(dirname(file), specifier);
          const target = path.startsWith(CLIENT_PACKAGE + sep) ? CLIENT : part(path);
          if (target !== CLIENT && !(target === 'schemas' && typeOnly)) wrong.push(`${name} imports ${specifier}`);
        } else if (!typeOnly) wrong.push(`${name} imports the package ${specifier}`);
      }
    }
    assert.deepEqual(wrong, []);
  });
});

// The folders of test/, as the table under "## Tests" in ARCHITECTURE.md lists them.
function testFoldersOfArchitecture(): string[] {
  const text = readFileSync(join(ROOT, 'ARCHITECTURE.md'), 'utf8');
  const section = text.split(/^## /m).find((s) => s.startsWith('Tests\n')) ?? '';
  return [...section.matchAll(/^\| `([a-z0-9-]+)\/` \|/gm)].map((m) => m[1]!);
}

describe('test folders', () => {
  const TEST = join(ROOT, 'test');

  it('are the folders ARCHITECTURE.md lists, and every test file is in one', () => {
    const listed = testFoldersOfArchitecture();
    assert.ok(listed.length >= 10, `only ${listed.length} test folders in ARCHITECTURE.md`);
    const folders = readdirSync(TEST, { withFileTypes: true }).filter((e) => e.isDirectory());
    assert.deepEqual(folders.map((e) => e.name).sort(), [...listed].sort());
    const loose = readdirSync(TEST).filter((name) => name.endsWith('.ts'));
    assert.deepEqual(loose, [], 'test files at the top of test/ belong in a feature folder');
  });

  it('import no other test file, except the slow checks (each in a process of its own)', () => {
    const imported: string[] = [];
    for (const file of sourceFiles(TEST)) {
      if (relative(TEST, file).startsWith(`slow${sep}`)) continue;
      for (const { specifier } of importsOf(file)) {
        if (specifier.startsWith('.') && specifier.endsWith('.test.js'))
          imported.push(`${relative(ROOT, file)} imports ${specifier}`);
      }
    }
    assert.deepEqual(imported, []);
  });
});
