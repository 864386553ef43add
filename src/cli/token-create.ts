import { issueToken } from '../auth/tokens.js';
import { checkExpiresIn, checkScopes } from '../manage/tokens.js';
import { commandConfig, jsonFlag, listFlag, ownerFlag, type Command } from './args.js';
import { printJson } from './rows.js';
import { openCommandStore } from './store.js';

export const tokenCreate: Command = {
  name: 'token create',
  usage: 'token create --owner NAME [--scope SCOPE[,SCOPE...]] [--expires-in DURATION] [--json] [--db PATH|URL]',
  summary:
    'Issues a bearer token for an owner. Only the token goes to stdout, so TOKEN=$(plant-store token create --owner me) works; details go to stderr (with --json, all of it goes to stdout as one JSON object). The token is shown this once; only its hash is stored.',
  output:
    'stdout: the token alone. stderr: its id, owner, scopes and expiry. With --json, stdout: {"id", "owner", "scopes", "expires" (ISO 8601 or null), "token"}.',
  settings: ['db', 'pg-pooler'],
  flags: {
    owner: { type: 'string', arg: 'NAME', help: 'owner whose plants the token reaches (required)' },
    scope: {
      type: 'string',
      multiple: true,
      arg: 'SCOPE[,SCOPE...]',
      help: 'plants:read, plants:write, or both separated by a comma',
      default: 'both',
    },
    'expires-in': { type: 'string', arg: 'DURATION', help: 'lifetime such as 30d, 12h, 90m (default: never expires)' },
    json: jsonFlag('the token, its id, owner, scopes and expiry'),
  },
  async run(ctx, values) {
    const owner = ownerFlag(values);
    const scopes = checkScopes(listFlag(values.scope), '--scope');
    const expiresIn = values['expires-in'];
    const expiresInMs = checkExpiresIn(typeof expiresIn === 'string' ? expiresIn : undefined, '--expires-in');
    const config = commandConfig(this, values, ctx);
    // mustExist: a mistyped --db is an error, not a new empty store.
    const store = await openCommandStore(config, { mustExist: true });
    try {
      const { token, record } = await issueToken(store.tokens, { owner, scopes, expiresInMs });
      if (values.json) {
        printJson(ctx.stdout, {
          id: record.id,
          owner: record.owner,
          scopes: record.scopes,
          expires: record.expiresAt?.toISOString() ?? null,
          token,
        });
        return 0;
      }
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
