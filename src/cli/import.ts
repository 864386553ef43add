import { DumpError, MAX_LINE_BYTES, readDump } from '../backup/dump.js';
import { LineTooLongError, boundedLines } from '../backup/line-reader.js';
import { openCommandStore } from './store.js';
import { UsageError, commandConfig, jsonFlag, type Command } from './args.js';
import { printJson } from './rows.js';

// Owners named in the token report; the rest are counted.
const OWNERS_SHOWN = 20;

export const importCommand: Command = {
  name: 'import',
  usage: 'import [--plants-only] [--json] [--db PATH|URL] < dump.ndjson',
  summary:
    'Reads JSON lines written by plant-store export from stdin into a store. Every record is checked as the API checks it. Tokens are imported too, so they keep working (the report says how many, for which owners); --plants-only leaves them out. Plants keep their order; what the store has already is skipped, so importing twice duplicates nothing.',
  output:
    'stderr: progress, then the records read, the tokens and plants stored, the owners of the tokens imported, and what was skipped. With --json, stdout: {"read", "tokens", "plants", "tokensSkipped", "plantsSkipped", "tokenOwners"}: the records read, those stored, those skipped (already in the store, or tokens left out by --plants-only), and the owners of the tokens stored, each with its count. Exit code 2 when stdin is not an export, or a line is too long (its number is given); the records before that line are stored, and importing again is safe.',
  settings: ['db', 'pg-pooler'],
  flags: {
    'plants-only': { type: 'boolean', help: "import only the plants, not the dump's tokens" },
    json: jsonFlag('the records read, the tokens and plants stored and the owners of the tokens'),
  },
  async run(ctx, values) {
    const plantsOnly = values['plants-only'] === true;
    const store = await openCommandStore(commandConfig(this, values, ctx));
    try {
      let reported = Date.now();
      const lines = boundedLines(ctx.stdin, MAX_LINE_BYTES);
      const done = await readDump(
        store,
        lines,
        (p) => {
          if (Date.now() - reported < 1000) return;
          reported = Date.now();
          ctx.stderr.write(`import: ${p.read} records read so far\n`);
        },
        { plantsOnly },
      );
      if (values.json) {
        printJson(ctx.stdout, {
          read: done.read,
          tokens: done.tokens,
          plants: done.plants,
          tokensSkipped: done.tokensSkipped,
          plantsSkipped: done.plantsSkipped,
          tokenOwners: Object.fromEntries(done.tokenOwners),
        });
        return 0;
      }
      ctx.stderr.write(
        `import: ${done.read} records read; ${done.tokens} tokens and ${done.plants} plants were new and are stored\n`,
      );
      if (done.tokens > 0) {
        const owners = [...done.tokenOwners].map(([owner, n]) => `${owner} (${n})`);
        const shown = owners.slice(0, OWNERS_SHOWN).join(', ');
        const more = owners.length > OWNERS_SHOWN ? ` and ${owners.length - OWNERS_SHOWN} more owners` : '';
        ctx.stderr.write(
          `import: the ${done.tokens} new tokens work here now, for ${owners.length} owners: ${shown}${more}; ` +
            'use --plants-only to import plants without tokens\n',
        );
      }
      if (plantsOnly && done.tokensSkipped > 0)
        ctx.stderr.write(`import: ${done.tokensSkipped} tokens left out (--plants-only)\n`);
      const present = plantsOnly ? 0 : done.tokensSkipped;
      if (present > 0 || done.plantsSkipped > 0) {
        ctx.stderr.write(
          `import: ${present} tokens and ${done.plantsSkipped} plants were in the store already and are skipped\n`,
        );
      }
      return 0;
    } catch (error) {
      if (error instanceof DumpError) throw new UsageError(`stdin is not a plant-store export: ${error.message}`);
      if (error instanceof LineTooLongError) {
        throw new UsageError(`stdin is not a plant-store export: ${error.message}; no record is that long`);
      }
      throw error;
    } finally {
      await store.close();
    }
  },
};
