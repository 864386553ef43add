import { hash } from 'node:crypto';

/**
 * A strong entity tag for a representation made of `parts` (a body, and
 * what belongs with it, such as a list page's next cursor): a digest of
 * their bytes, so equal answers get equal tags on every process and after
 * restarts, and any change of a byte changes the tag. Strong: a match means
 * the bytes are the same (this service never compresses or reformats an
 * answer on its way out). Here, below `http/`, because the stores tag the
 * list pages they write, once per read (JsonPage).
 */
export function entityTag(...parts: string[]): string {
  // One call over the joined text (each part ended by a NUL) digests the same
  // bytes as a Hash fed part by part, without making a Hash object for each page.
  let text = '';
  for (const part of parts) text += `${part}\0`;
  return `"${hash('sha256', text, 'base64url').slice(0, 27)}"`;
}
