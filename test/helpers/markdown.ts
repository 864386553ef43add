// The Markdown pages users read (README.md, docs/, the client package's
// README) and what the documentation tests need from them: links, heading
// anchors and fenced code blocks.
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

export const REPO = fileURLToPath(new URL('../../../', import.meta.url));

function markdownUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? markdownUnder(join(dir, e.name)) : e.name.endsWith('.md') ? [join(dir, e.name)] : [],
  );
}

/** Absolute paths of every documentation page. */
export function docPages(): string[] {
  return [join(REPO, 'README.md'), join(REPO, 'packages/client/README.md'), ...markdownUnder(join(REPO, 'docs'))];
}

export const shortName = (file: string): string => relative(REPO, file);

export interface CodeBlock {
  file: string;
  line: number;
  lang: string;
  code: string;
}

export function codeBlocks(file: string): CodeBlock[] {
  const blocks: CodeBlock[] = [];
  const lines = readFileSync(file, 'utf8').split('\n');
  for (let i = 0; i < lines.length; i++) {
    const open = /^(\s*)```(\S*)\s*$/.exec(lines[i]!);
    if (!open) continue;
    const indent = open[1]!.length;
    const body: string[] = [];
    let j = i + 1;
    while (j < lines.length && !/^\s*```\s*$/.test(lines[j]!)) body.push(lines[j++]!.slice(indent));
    blocks.push({ file, line: i + 1, lang: open[2]!, code: body.join('\n') + '\n' });
    i = j;
  }
  return blocks;
}

/** The text outside fenced blocks and inline code, where links are links. */
export function prose(file: string): string {
  return readFileSync(file, 'utf8')
    .replace(/^\s*```[^]*?^\s*```\s*$/gm, '')
    .replace(/`[^`\n]*`/g, '');
}

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens, repeats numbered. */
export function anchors(file: string): Set<string> {
  const seen = new Map<string, number>();
  const found = new Set<string>();
  const text = readFileSync(file, 'utf8').replace(/^\s*```[^]*?^\s*```\s*$/gm, '');
  for (const m of text.matchAll(/^#{1,6}\s+(.+?)\s*#*\s*$/gm)) {
    const base = m[1]!
      .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-');
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    found.add(n === 0 ? base : `${base}-${n}`);
  }
  return found;
}
