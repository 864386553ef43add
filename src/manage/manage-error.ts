/**
 * A request to manage tokens or webhooks that cannot be done as asked: bad
 * input (the CLI's exit 2, the admin API's 400), or nothing has that id (exit
 * 1, 404). The message names the field as the caller gave it (--owner, owner).
 */
export class ManageError extends Error {
  constructor(
    readonly kind: 'invalid' | 'not-found',
    message: string,
  ) {
    super(message);
    this.name = 'ManageError';
  }
}

/** An id as the caller gave it, shortened and quoted for a message. */
export const shownId = (id: string): string => JSON.stringify(id.slice(0, 64));
