// plant-store webhook add / list / remove, and what the store keeps of a
// signing secret (sealed with a key file outside the database).
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, describe, it } from '../helpers/requirements.js';
import { query } from '../helpers/pg.js';
import { runCliInProcess as runCli } from '../helpers/cli.js';
import { type CliResult } from '../helpers/server.js';
import { describeEachStore } from '../helpers/stores.js';

const LIMIT = { timeout: 60_000 };
const SECRET = /^whsec_[A-Za-z0-9+/]+=*$/;
const dir = mkdtempSync(join(tmpdir(), 'plant-store-webhooks-cli-'));
after(() => rmSync(dir, { recursive: true, force: true }));

interface ListRow {
  id: string;
  owner: string;
  url: string;
  events: string[];
  pending: number;
  created: string;
  disabled: string | null;
  disabledReason: string | null;
}

function expectUsageError(r: CliResult, message: RegExp): void {
  assert.equal(r.code, 2, `exit code 2: ${r.stderr}`);
  assert.match(r.stderr, message);
  assert.equal(r.stdout, '');
  assert.doesNotMatch(r.stderr, /\n\s+at /, 'no stack trace');
}

describeEachStore('plant-store webhook', (fx) => {
  const keyPath = join(dir, `${fx.kind}.key`);
  const add = (...args: string[]) => runCli(['webhook', 'add', '--db', fx.db, '--webhook-key-file', keyPath, ...args]);
  const list = async (): Promise<ListRow[]> => {
    const r = await runCli(['webhook', 'list', '--json', '--db', fx.db]);
    assert.equal(r.code, 0, r.stderr);
    return r.stdout
      .trim()
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as ListRow);
  };

  it(
    'add prints only the secret on stdout, the details and warnings on stderr, and creates the key file 0600',
    LIMIT,
    async () => {
      assert.equal((await runCli(['migrate', '--db', fx.db])).code, 0);
      const r = await add('--owner', 'alice', '--url', 'http://127.0.0.1:9/hook?k=1');
      assert.equal(r.code, 0, r.stderr);
      const lines = r.stdout.split('\n');
      assert.deepEqual(lines.length, 2, 'one line and its newline');
      const secret = lines[0]!;
      assert.match(secret, SECRET);
      assert.ok(Buffer.from(secret.slice('whsec_'.length), 'base64').length >= 24, 'at least 24 random bytes');
      assert.match(r.stderr, /created the webhook key .*: every server needs it/);
      assert.match(
        r.stderr,
        /created wh_[0-9a-f]{16} for owner "alice": POST http:\/\/127\.0\.0\.1:9\/hook\?k=1 on plant\.created, plant\.deleted/,
      );
      assert.match(
        r.stderr,
        /warning: 127\.0\.0\.1 is a loopback address: servers refuse to deliver there unless started with --webhooks-allow-private/,
      );
      assert.match(r.stderr, /warning: not https/);
      assert.doesNotMatch(r.stderr, /whsec_/, 'the secret only on stdout');
      assert.equal(statSync(keyPath).mode & 0o777, 0o600);

      const again = await add('--owner', 'bob', '--url', 'https://localhost:8443/', '--events', 'plant.deleted');
      assert.equal(again.code, 0, again.stderr);
      assert.doesNotMatch(again.stderr, /created the webhook key/, 'the key is created once');
      assert.match(again.stderr, /warning: localhost resolves to (127\.0\.0\.1|::1), which is a loopback address/);
      assert.notEqual(again.stdout.trim(), secret, 'each endpoint has its own secret');

      const rows = await list();
      assert.deepEqual(
        rows.map((e) => [e.owner, e.events, e.disabled, e.pending, e.url]),
        [
          ['alice', ['plant.created', 'plant.deleted'], null, 0, 'http://127.0.0.1:9/hook?k=1'],
          ['bob', ['plant.deleted'], null, 0, 'https://localhost:8443/'],
        ],
      );
      for (const row of rows) assert.match(row.id, /^wh_[0-9a-f]{16}$/);
      const table = await runCli(['webhook', 'list', '--db', fx.db]);
      assert.equal(table.code, 0);
      assert.deepEqual(table.stdout.split('\n')[0]!.trim().split(/\s+/), [
        'ID',
        'OWNER',
        'EVENTS',
        'STATUS',
        'PENDING',
        'CREATED',
        'URL',
      ]);
      assert.doesNotMatch(table.stdout + (await runCli(['webhook', 'list', '--json', '--db', fx.db])).stdout, /whsec_/);

      // What a copy of the database alone reveals: not the secret.
      const raw = Buffer.from(secret.slice('whsec_'.length), 'base64');
      if (fx.kind === 'sqlite') {
        for (const f of readdirSync(dirname(fx.db)).filter((f) => f.startsWith('plants.db'))) {
          const bytes = readFileSync(join(dirname(fx.db), f));
          assert.equal(bytes.indexOf(raw), -1, `${f} does not hold the secret's bytes`);
          assert.equal(bytes.indexOf(Buffer.from(secret)), -1, `${f} does not hold the secret's text`);
        }
      } else {
        const stored = await query<{ secret: Buffer }>(fx.db, 'SELECT secret FROM webhook_endpoints');
        for (const { secret: sealed } of stored) {
          assert.equal(sealed.indexOf(raw), -1, 'the stored secret is sealed');
          assert.equal(sealed.toString('latin1').includes(secret), false);
        }
      }
    },
  );

  it('remove drops an endpoint by id; an unknown id exits 1', LIMIT, async () => {
    const [first] = await list();
    const r = await runCli(['webhook', 'remove', first!.id, '--db', fx.db]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stderr, /removed/);
    assert.ok(!(await list()).some((e) => e.id === first!.id));
    const again = await runCli(['webhook', 'remove', first!.id, '--db', fx.db]);
    assert.equal(again.code, 1);
    assert.equal(again.stderr, `plant-store webhook remove: no webhook endpoint has the id "${first!.id}"\n`);
    expectUsageError(await runCli(['webhook', 'remove', '--db', fx.db]), /give exactly one webhook id/);
  });

  it('bad input is a usage error (exit 2) and stores nothing', LIMIT, async () => {
    const before = (await list()).length;
    expectUsageError(await add('--url', 'https://example.com/'), /--owner is required/);
    expectUsageError(await add('--owner', 'alice'), /--url is required/);
    expectUsageError(await add('--owner', 'a b', '--url', 'https://example.com/'), /--owner: owner must be/);
    expectUsageError(await add('--owner', 'alice', '--url', 'ftp://example.com/'), /--url must be an http/);
    expectUsageError(await add('--owner', 'alice', '--url', 'not a url'), /--url must be an absolute/);
    expectUsageError(
      await add('--owner', 'alice', '--url', 'https://user:pw@example.com/'),
      /must not carry a user name or password/,
    );
    expectUsageError(
      await add('--owner', 'alice', '--url', 'https://example.com/', '--events', 'plant.updated'),
      /--events: "plant.updated" is not one of plant.created, plant.deleted/,
    );
    expectUsageError(
      await add('--owner', 'alice', '--url', 'https://example.com/', '--bogus'),
      /unknown option --bogus/,
    );
    assert.equal((await list()).length, before);
  });
});

describe('plant-store webhook --help', () => {
  it('states each command, its flags and defaults', LIMIT, async () => {
    const [add, list, remove, serve] = await Promise.all([
      runCli(['webhook', 'add', '--help']),
      runCli(['webhook', 'list', '--help']),
      runCli(['webhook', 'remove', '--help']),
      runCli(['serve', '--help']),
    ]);
    for (const r of [add, list, remove, serve]) assert.equal(r.code, 0, r.stderr);
    for (const needle of ['--owner', '--url', '--events', 'plant.created,plant.deleted', '--webhook-key-file', '--db'])
      assert.ok(add.stdout.includes(needle), `webhook add --help mentions ${needle}`);
    assert.match(list.stdout, /--json/);
    assert.match(remove.stdout, /^Usage: plant-store webhook remove ID/);
    assert.match(serve.stdout, /--webhooks-allow-private {2,}/, 'a flag without a value');
    assert.match(serve.stdout, /--webhook-timeout-ms MS .*\n.*default: 10000\)/);
    const help = await runCli(['--help']);
    for (const c of ['webhook add', 'webhook list', 'webhook remove'])
      assert.match(help.stdout, new RegExp(`\\b${c}\\b`));
  });
});
