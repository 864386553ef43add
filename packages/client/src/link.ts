// One link-value of a Link header (RFC 8288): <target>; param=value; ...
const LINK_VALUE = /<([^>]*)>((?:\s*;\s*[^;,]+)*)/g;
const REL = /;\s*rel\s*=\s*(?:"([^"]*)"|([^\s;,"]+))/i;

/** The target of the rel="next" link in a Link header, if there is one. */
export function nextLink(header: string | null): string | undefined {
  if (header === null) return undefined;
  for (const [, target, params] of header.matchAll(LINK_VALUE)) {
    const rel = REL.exec(params ?? '');
    const rels = (rel?.[1] ?? rel?.[2] ?? '').toLowerCase().split(/\s+/);
    if (rels.includes('next')) return target;
  }
  return undefined;
}
