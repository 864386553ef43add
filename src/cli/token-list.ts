import { commandConfig, type Command } from './args.js';
import { printJsonLines, printTable } from './rows.js';
import { openCommandStore } from './store.js';

export const tokenList: Command = {
  name: 'token list',
  usage: 'token list [--json] [--db PATH|URL]',
  summary:
    'Lists tokens: id, owner, scopes, created, expires, revoked. Secrets are never shown (only their hashes are stored).',
  output:
    'stdout: a table (ID, OWNER, SCOPES, CREATED, EXPIRES, REVOKED). With --json, one object per token and line: {"id", "owner", "scopes", "created", "expires", "revoked"}.',
  settings: ['db', 'pg-pooler'],
  flags: {
    json: {
      type: 'boolean',
      help: 'one JSON object per line instead of a table (scopes an array; expires and revoked null when unset)',
    },
  },
  async run(ctx, values) {
    // mustExist: a mistyped --db is an error, not a new empty store;
    // existingSchema: a database that is not ours gets no tables.
    const store = await openCommandStore(commandConfig(this, values, ctx), {
      mustExist: true,
      existingSchema: true,
    });
    try {
      const tokens = await store.tokens.list();
      if (values.json) {
        // Real JSON types: scopes an array, a missing expiry or revocation null.
        printJsonLines(
          ctx.stdout,
          tokens.map((t) => ({
            id: t.id,
            owner: t.owner,
            scopes: t.scopes,
            created: t.createdAt.toISOString(),
            expires: t.expiresAt?.toISOString() ?? null,
            revoked: t.revokedAt?.toISOString() ?? null,
          })),
        );
        return 0;
      }
      const rows = tokens.map((t) => ({
        id: t.id,
        owner: t.owner,
        scopes: t.scopes.join(' '),
        created: t.createdAt.toISOString(),
        expires: t.expiresAt?.toISOString() ?? '-',
        revoked: t.revokedAt?.toISOString() ?? '-',
      }));
      const header = {
        id: 'ID',
        owner: 'OWNER',
        scopes: 'SCOPES',
        created: 'CREATED',
        expires: 'EXPIRES',
        revoked: 'REVOKED',
      };
      printTable(ctx.stdout, header, rows);
      return 0;
    } finally {
      await store.close();
    }
  },
};
