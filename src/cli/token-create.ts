import { loadConfig } from '../config.js';
import { issueToken, parseDuration } from '../auth/tokens.js';
import { SCOPES, type Scope } from '../store/store.js';
import { UsageError, ownerFlag, settingFlags, type Command } from './args.js';
import { openCommandStore } from './store.js';

export const tokenCreate: Command = {
  name: 'token create',
  usage: 'token create --owner NAME [--scope SCOPE]... [--expires-in DURATION] [--db PATH_OR_URL]',
  summary:
    'Issues a bearer token for an owner. Only the token goes to stdout, so TOKEN=$(plant-store token create --owner me) works; details go to stderr. The token is shown this once; only its hash is stored.',
  settings: ['db', 'pg-pooler'],
  flags: {
    owner: { type: 'string', help: 'owner whose plants the token reaches (required)' },
    scope: { type: 'string', multiple: true, help: 'plants:read or plants:write, repeatable', default: 'both' },
    'expires-in': { type: 'string', help: 'lifetime such as 30d, 12h, 90m (default: never expires)' },
  },
  async run(ctx, values) {
    const owner = ownerFlag(values);
    const scopes = (values.scope as string[] | undefined) ?? [];
    for (const s of scopes) {
      if (!SCOPES.includes(s as Scope)) throw new UsageError(`--scope must be one of ${SCOPES.join(', ')}, got "${s}"`);
    }
    let expiresInMs: number | undefined;
    if (typeof values['expires-in'] === 'string') {
      try {
        expiresInMs = parseDuration(values['expires-in']);
      } catch (error) {
        throw new UsageError(`--expires-in: ${(error as Error).message}`);
      }
    }
    const config = loadConfig(settingFlags(this, values), ctx.env, {}, this.settings);
    // mustExist: a mistyped --db is an error, not a new empty store.
    const store = await openCommandStore(config, { mustExist: true });
    try {
      const { token, record } = await issueToken(store.tokens, { owner, scopes: scopes as Scope[], expiresInMs });
      ctx.stdout.write(`${token}\n`);
      ctx.stderr.write(
        `created ${record.id} for owner "${record.owner}" with scopes ${record.scopes.join(' ')}` +
          (record.expiresAt ? `, expires ${record.expiresAt.toISOString()}` : ', never expires') +
          '\n',
      );
      return 0;
    } finally {
      await store.close();
    }
  },
};
