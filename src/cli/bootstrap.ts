import { issueFirstToken } from '../auth/tokens.js';
import type { Config } from '../config.js';
import type { Store } from '../store/store.js';
import type { CommandContext } from './args.js';

/** Creates the first token when the store has none, so a fresh install can be used at once. */
export async function bootstrapToken(store: Store): Promise<string | undefined> {
  return (await issueFirstToken(store.tokens, { owner: 'admin' }))?.token;
}

/**
 * Prints a token bootstrapToken created. Call it as soon as the token is
 * stored, before listening: if listen then fails (port in use), the token
 * must not be lost, since it is stored only as a hash. With `url` the curl
 * example follows at once; without (port 0: the port is not known yet) call
 * announceCurl once the server listens.
 */
export function announceToken(ctx: CommandContext, token: string, url?: string): void {
  ctx.stderr.write(
    `\nNo tokens existed, so one was created for owner "admin". It is shown only this once:\n\n  ${token}\n\n`,
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
