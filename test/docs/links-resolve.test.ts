// Every relative link in README.md and docs/ leads somewhere: the file exists,
// and an #anchor names a heading of the page it points at.
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { it } from '../helpers/requirements.js';
import { anchors, docPages, prose, REPO, shortName } from '../helpers/markdown.js';

const pages = docPages();

it('finds the pages', () => {
  assert.ok(pages.length >= 20, `only ${pages.length} pages`);
});

it('every relative link resolves, #anchors included', () => {
  const broken: string[] = [];
  let checked = 0;
  for (const page of pages) {
    for (const m of prose(page).matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
      const target = m[1]!;
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto:
      checked++;
      const [path, anchor] = target.split('#') as [string, string | undefined];
      const file = path === '' ? page : resolve(dirname(page), decodeURIComponent(path));
      if (!existsSync(file)) {
        broken.push(`${shortName(page)}: ${target} (no such file)`);
        continue;
      }
      if (anchor !== undefined && file.endsWith('.md') && !statSync(file).isDirectory()) {
        if (!anchors(file).has(anchor)) broken.push(`${shortName(page)}: ${target} (no such heading)`);
      }
    }
  }
  assert.deepEqual(broken, []);
  assert.ok(checked > 50, `only ${checked} links checked`);
});

it('the anchor rule matches headings as GitHub writes them', () => {
  const page = pages.find((p) => p.endsWith('docs/getting-started.md'))!;
  assert.ok(anchors(page).has('4-the-plant-store-command'), [...anchors(page)].join(' '));
});

/** Every .ts file under `dir` (relative to the repository). */
function sourcesUnder(dir: string): string[] {
  return readdirSync(join(REPO, dir), { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sourcesUnder(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : [],
  );
}

it('every test file or test folder a page, a source or a test names exists', () => {
  const files = [
    ...['README.md', 'ARCHITECTURE.md', 'SECURITY.md'].map((f) => join(REPO, f)),
    ...pages,
    ...['src', 'test', 'scripts'].flatMap(sourcesUnder).map((f) => join(REPO, f)),
  ];
  const missing: string[] = [];
  let named = 0;
  for (const file of files) {
    for (const m of readFileSync(file, 'utf8').matchAll(
      /(?<![\w./-])test\/(?:[a-z0-9-]+\/)*(?:[a-z0-9-]+\.test\.ts)?/g,
    )) {
      named++;
      if (!existsSync(join(REPO, m[0]))) missing.push(`${shortName(file)}: ${m[0]}`);
    }
  }
  assert.deepEqual(missing, []);
  assert.ok(named > 40, `only ${named} test paths named`);
});
