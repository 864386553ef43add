import { issueFirstToken, unusableReason } from '../auth/tokens.js';
import type { Config } from '../config.js';
import type { Store } from '../store/store.js';
import type { CommandContext } from './args.js';
import type { StoreLocation } from './store-location.js';

/** Creates the first token when the store has none, so a fresh install can be used at once. */
export async function bootstrapToken(store: Store): Promise<string | undefined> {
  return (await issueFirstToken(store.tokens, { owner: 'admin' }))?.token;
}

/** Tokens that are neither revoked nor expired. */
export async function usableTokenCount(store: Store, now = Date.now()): Promise<number> {
  const tokens = await store.tokens.list();
  return tokens.filter((t) => unusableReason(t, now) === undefined).length;
}

/**
 * The start-up line about tokens on a store that already had some: how to
 * get one when none is usable any more, or when the first one was lost.
 */
export function logTokenHint(
  log: { info(msg: string): void; warn(msg: string): void },
  usable: number,
  where: StoreLocation,
): void {
  const db = where.store === 'sqlite' ? ` --db ${where.path}` : ' (with the same --db or PLANTS_DB)';
  const create = `plant-store token create --owner NAME${db}`;
  if (usable === 0)
    log.warn(`no usable token: every token of this store is revoked or expired; create one with: ${create}`);
  else log.info(`tokens: ${usable} usable; to get another (or replace a lost one): ${create}`);
}

/**
 * Prints a token bootstrapToken created, after the path of the SQLite file
 * serve created just now (`newStore`), if it did. Call it as soon as the token is
 * stored, before listening: if listen then fails (port in use), the token
 * must not be lost, since it is stored only as a hash. With `url` the curl
 * example follows at once; without (port 0: the port is not known yet) call
 * announceCurl once the server listens.
 */
export function announceToken(ctx: CommandContext, token: string, url?: string, newStore?: string): void {
  const where = newStore === undefined ? '' : `\nA new, empty store was created: the SQLite file ${newStore}.`;
  ctx.stderr.write(
    `${where}\nNo tokens existed, so one was created for owner "admin". It is shown only this once:\n\n  ${token}\n\n`,
  );
  if (url !== undefined) announceCurl(ctx, token, url);
}

export function announceCurl(ctx: CommandContext, token: string, url: string): void {
  ctx.stderr.write(`Try: curl -H "Authorization: Bearer ${token}" ${url}/plants\n\n`);
}

export function baseUrl(config: Pick<Config, 'host' | 'port'>, port = config.port): string {
  const host =
    config.host === '0.0.0.0'
      ? '127.0.0.1'
      : config.host === '::'
        ? '[::1]'
        : config.host.includes(':')
          ? `[${config.host}]`
          : config.host;
  return `http://${host}:${port}`;
}
