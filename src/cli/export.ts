import { once } from 'node:events';
import { writeDump } from '../backup/dump.js';
import { openCommandStore } from './store.js';
import { commandConfig, jsonFlag, type Command } from './args.js';
import { printJson } from './rows.js';

export const exportCommand: Command = {
  name: 'export',
  usage: 'export [--json] [--db PATH|URL] > dump.ndjson',
  summary:
    'Writes every token (as its hash) and plant of a store to stdout as JSON lines, each owner in insertion order; plant-store import reads them into any store.',
  output:
    'stdout: the export, one JSON object per line. stderr: progress, then the counts written. With --json, stderr: {"tokens", "plants"} instead.',
  settings: ['db', 'pg-pooler'],
  flags: {
    json: jsonFlag('the tokens and plants written, on stderr (stdout carries the export itself)'),
  },
  async run(ctx, values) {
    // existingSchema: a database that is not ours gets no tables.
    const store = await openCommandStore(commandConfig(this, values, ctx), {
      mustExist: true,
      existingSchema: true,
    });
    try {
      let reported = Date.now();
      const done = await writeDump(
        store,
        async (line) => {
          if (!ctx.stdout.write(line)) await once(ctx.stdout, 'drain');
        },
        (p) => {
          if (Date.now() - reported < 1000) return;
          reported = Date.now();
          ctx.stderr.write(`export: ${p.tokens} tokens, ${p.plants} plants so far\n`);
        },
      );
      if (values.json) printJson(ctx.stderr, { tokens: done.tokens, plants: done.plants });
      else ctx.stderr.write(`export: ${done.tokens} tokens and ${done.plants} plants written\n`);
      return 0;
    } finally {
      await store.close();
    }
  },
};
