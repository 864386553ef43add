// Every relative link in README.md and docs/ leads somewhere: the file exists,
// and an #anchor names a heading of the page it points at.
import assert from 'node:assert/strict';
import { existsSync, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { it } from './helpers/requirements.js';
import { anchors, docPages, prose, shortName } from './helpers/markdown.js';

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
