import { createInterface } from 'node:readline';
import { DumpError, readDump } from '../backup/dump.js';
import { loadConfig } from '../config.js';
import { openCommandStore } from './store.js';
import { UsageError, settingFlags, type Command } from './args.js';

export const importCommand: Command = {
  name: 'import',
  usage: 'import [--db PATH_OR_URL] < dump.ndjson',
  summary:
    'Reads JSON lines written by plant-store export from stdin into a store. Tokens keep working; plants keep their order; what the store has already is skipped, so importing twice duplicates nothing.',
  settings: ['db', 'pg-pooler'],
  async run(ctx, values) {
    const store = await openCommandStore(loadConfig(settingFlags(this, values), ctx.env, {}, this.settings));
    try {
      let reported = Date.now();
      const lines = createInterface({ input: ctx.stdin, crlfDelay: Infinity });
      const done = await readDump(store, lines, (p) => {
        if (Date.now() - reported < 1000) return;
        reported = Date.now();
        ctx.stderr.write(`import: ${p.read} records read so far\n`);
      });
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
