import { hashToken, looksLikeToken } from '../auth/tokens.js';
import { UsageError, commandConfig, jsonFlag, type Command } from './args.js';
import { printJson } from './rows.js';
import { openCommandStore } from './store.js';
import { CliError } from './store-errors.js';

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
      const found = await store.tokens.revoke(looksLikeToken(target) ? hashToken(target) : target, new Date());
      // main() prints it as every error, after "plant-store token revoke: "; a token given is never echoed.
      if (!found)
        throw new CliError(
          looksLikeToken(target)
            ? 'no token matches the token given'
            : `no token has the id ${JSON.stringify(target.slice(0, 64))}`,
        );
      // Given the token itself, its id is not known here, and the token is never echoed.
      if (values.json) printJson(ctx.stdout, { revoked: true, id: looksLikeToken(target) ? null : target });
      else ctx.stderr.write('revoked\n');
      return 0;
    } finally {
      await store.close();
    }
  },
};
