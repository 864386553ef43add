import { printJsonLines, printTable } from './rows.js';
import { openCommandStore } from './store.js';
import { commandConfig, type Command } from './args.js';

export const webhookList: Command = {
  name: 'webhook list',
  usage: 'webhook list [--json] [--db PATH|URL]',
  summary:
    'Lists webhook endpoints: id, owner, events, status (active, or disabled and why), events waiting for delivery, created, URL. Secrets are never shown.',
  output:
    'stdout: a table (ID, OWNER, EVENTS, STATUS, PENDING, CREATED, URL). With --json, one object per endpoint and line: {"id", "owner", "url", "events", "pending", "created", "disabled", "disabledReason"}.',
  settings: ['db', 'pg-pooler'],
  flags: {
    json: {
      type: 'boolean',
      help: 'one JSON object per line instead of a table (events an array, pending a number, disabled null when active)',
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
      const endpoints = await store.webhooks.list();
      if (values.json) {
        // Real JSON types, as token list --json has them.
        printJsonLines(
          ctx.stdout,
          endpoints.map((e) => ({
            id: e.id,
            owner: e.owner,
            url: e.url,
            events: e.events,
            pending: e.pending,
            created: e.createdAt.toISOString(),
            disabled: e.disabledAt?.toISOString() ?? null,
            disabledReason: e.disabledReason ?? null,
          })),
        );
        return 0;
      }
      const rows = endpoints.map((e) => ({
        id: e.id,
        owner: e.owner,
        events: e.events.join(','),
        status: e.disabledAt ? `disabled ${e.disabledAt.toISOString()}: ${e.disabledReason ?? ''}` : 'active',
        pending: String(e.pending),
        created: e.createdAt.toISOString(),
        url: e.url,
      }));
      const header = {
        id: 'ID',
        owner: 'OWNER',
        events: 'EVENTS',
        status: 'STATUS',
        pending: 'PENDING',
        created: 'CREATED',
        url: 'URL',
      };
      printTable(ctx.stdout, header, rows);
      return 0;
    } finally {
      await store.close();
    }
  },
};
