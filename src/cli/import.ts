import { createInterface } from 'node:readline';
import { DumpError, readDump } from '../backup/dump.js';
import { openCommandStore } from './store.js';
import { UsageError, commandConfig, jsonFlag, type Command } from './args.js';
import { printJson } from './rows.js';

export const importCommand: Command = {
  name: 'import',
  usage: 'import [--json] [--db PATH|URL] < dump.ndjson',
  summary:
    'Reads JSON lines written by plant-store export from stdin into a store. Tokens keep working; plants keep their order; what the store has already is skipped, so importing twice duplicates nothing.',
  output:
    'stderr: progress, then the records read and the tokens and plants stored. With --json, stdout: {"read", "tokens", "plants"}. Exit code 2 when stdin is not an export.',
  settings: ['db', 'pg-pooler'],
  flags: { json: jsonFlag('the records read and the tokens and plants stored') },
  async run(ctx, values) {
    const store = await openCommandStore(commandConfig(this, values, ctx));
    try {
      let reported = Date.now();
      const lines = createInterface({ input: ctx.stdin, crlfDelay: Infinity });
      const done = await readDump(store, lines, (p) => {
        if (Date.now() - reported < 1000) return;
        reported = Date.now();
        ctx.stderr.write(`import: ${p.read} records read so far\n`);
      });
      if (values.json) printJson(ctx.stdout, { read: done.read, tokens: done.tokens, plants: done.plants });
      else
        ctx.stderr.write(
          `import: ${done.read} records read; ${done.tokens} tokens and ${done.plants} plants were new and are stored\n`,
        );
      return 0;
    } catch (error) {
      if (error instanceof DumpError) throw new UsageError(`stdin is not a plant-store export: ${error.message}`);
      throw error;
    } finally {
      await store.close();
    }
  },
};
