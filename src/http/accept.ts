/**
 * Whether an Accept header admits `type` (such as "text/event-stream"), as
 * RFC 9110 12.5.1 reads it: the most specific media range that matches
 * (`type/subtype`, then `type/*`, then `*\/*`) decides, by its q-value; q=0
 * refuses. No Accept header, or an empty one, admits anything. Parameters
 * other than q are not compared; a q-value that is not a number is ignored.
 */
export function accepts(header: string | undefined, type: string): boolean {
  if (header === undefined || header.trim() === '') return true;
  const wanted = type.toLowerCase();
  const anySubtype = `${wanted.slice(0, wanted.indexOf('/'))}/*`;
  let best = -1;
  let q = 0;
  for (const element of header.split(',')) {
    const [range = '', ...params] = element.split(';');
    const r = range.trim().toLowerCase();
    const specificity = r === wanted ? 2 : r === anySubtype ? 1 : r === '*/*' ? 0 : -1;
    if (specificity < best) continue;
    let weight = 1;
    for (const param of params) {
      const [name = '', value = ''] = param.split('=');
      const parsed = Number(value.trim());
      if (name.trim().toLowerCase() === 'q' && value.trim() !== '' && !Number.isNaN(parsed)) weight = parsed;
    }
    // Two ranges equally specific (text/event-stream twice): the larger q counts.
    q = specificity > best ? weight : Math.max(q, weight);
    best = specificity;
  }
  return best >= 0 && q > 0;
}
