import { looksLikeToken } from '../auth/tokens.js';
import { revokeToken } from '../manage/tokens.js';
import { UsageError, commandConfig, jsonFlag, type Command } from './args.js';
import { printJson } from './rows.js';
import { openCommandStore } from './store.js';

export const tokenRevoke: Command = {
  name: 'token revoke',
  positionals: true,
  usage: 'token revoke TOKEN|ID [--json] [--db PATH|URL]',
  summary:
    'Revokes a token, given the token itself or its id (from token list). Every running server stops accepting it within a second.',
  output:
    'stderr: revoked. With --json, stdout: {"revoked": true, "id"} (id null when the token itself was given). Exit code 1 when no token matches.',
  settings: ['db', 'pg-pooler'],
  flags: { json: jsonFlag('what was revoked (revoked, and id when an id was given)') },
  async run(ctx, values, positionals) {
    if (positionals.length !== 1) throw new UsageError('give exactly one token or token id to revoke');
    const target = positionals[0]!;
    // mustExist: a mistyped --db is an error, not a new empty store;
    // existingSchema: a database that is not ours gets no tables.
    const store = await openCommandStore(commandConfig(this, values, ctx), {
      mustExist: true,
      existingSchema: true,
    });
    try {
      // A ManageError when none matches: main() prints it after "plant-store token revoke: ".
      await revokeToken(store.tokens, target);
      // Given the token itself, its id is not known here, and the token is never echoed.
      if (values.json) printJson(ctx.stdout, { revoked: true, id: looksLikeToken(target) ? null : target });
      else ctx.stderr.write('revoked\n');
      return 0;
    } finally {
      await store.close();
    }
  },
};
