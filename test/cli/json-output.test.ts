// --json: every command that reports something prints one JSON object a
// script can read, with ids and owners in fields; the plain form keeps a
// secret alone on stdout.
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from '../helpers/requirements.js';
import { runCliInProcess as runCli } from '../helpers/cli.js';
import { TOKEN_SHAPE } from '../helpers/server.js';

const dir = mkdtempSync(join(tmpdir(), 'plant-store-cli-json-'));
after(() => rmSync(dir, { recursive: true, force: true }));
const db = join(dir, 'plants.db');
const T = { timeout: 20_000 };

/** Runs the command, expects exit 0 and exactly one JSON line on stdout. */
async function json(args: string[], stdin = ''): Promise<Record<string, unknown>> {
  const r = await runCli(args, {}, stdin);
  assert.equal(r.code, 0, r.stderr);
  const lines = r.stdout.split('\n').filter(Boolean);
  assert.equal(lines.length, 1, `one line on stdout: ${r.stdout}`);
  return JSON.parse(lines[0]!) as Record<string, unknown>;
}

describe('--json', () => {
  before(async () => assert.equal((await runCli(['migrate', '--db', db])).code, 0));

  it('migrate: the migrations applied, none on an up-to-date store', T, async () => {
    assert.deepEqual(await json(['migrate', '--json', '--db', db]), { applied: [] });
    const fresh = await json(['migrate', '--json', '--db', join(dir, 'fresh.db')]);
    assert.ok(Array.isArray(fresh.applied) && fresh.applied.length > 0, JSON.stringify(fresh));
  });

  it('token create and token revoke: the token, its id, owner, scopes and expiry', T, async () => {
    const created = await json(['token', 'create', '--owner', 'alice', '--scope', 'plants:read', '--json', '--db', db]);
    assert.match(String(created.token), TOKEN_SHAPE);
    assert.equal(created.owner, 'alice');
    assert.deepEqual(created.scopes, ['plants:read']);
    assert.equal(created.expires, null);
    assert.equal(typeof created.id, 'string');
    const revoked = await json(['token', 'revoke', String(created.id), '--json', '--db', db]);
    assert.deepEqual(revoked, { revoked: true, id: created.id });
  });

  it('token create without --json: the token alone on stdout, the details on stderr', T, async () => {
    const r = await runCli(['token', 'create', '--owner', 'bob', '--scope', 'plants:read,plants:write', '--db', db]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^plnt_[A-Za-z0-9_-]{43}\n$/);
    assert.match(r.stderr, /for owner "bob" with scopes plants:read plants:write/);
  });

  it('webhook add and webhook remove: the secret, id, owner, URL and events', T, async () => {
    const keyFile = join(dir, 'webhook.key');
    const added = await json([
      'webhook',
      'add',
      '--owner',
      'alice',
      '--url',
      'https://hooks.example.com/plants',
      '--events',
      'plant.created',
      '--webhook-key-file',
      keyFile,
      '--json',
      '--db',
      db,
    ]);
    assert.match(String(added.secret), /^whsec_/);
    assert.equal(added.owner, 'alice');
    assert.equal(added.url, 'https://hooks.example.com/plants');
    assert.deepEqual(added.events, ['plant.created']);
    assert.equal(added.keyFile, keyFile);
    assert.equal(added.keyCreated, true);
    const removed = await json(['webhook', 'remove', String(added.id), '--json', '--db', db]);
    assert.deepEqual(removed, { removed: true, id: added.id });
  });

  it('export (its report on stderr, stdout being the export), import and backup', T, async () => {
    const exported = await runCli(['export', '--json', '--db', db]);
    assert.equal(exported.code, 0, exported.stderr);
    const report = JSON.parse(exported.stderr.trim()) as { tokens: number; plants: number };
    assert.ok(report.tokens >= 2, exported.stderr);
    assert.equal(report.plants, 0);
    const imported = await json(['import', '--json', '--db', join(dir, 'copy.db')], exported.stdout);
    assert.equal(imported.tokens, report.tokens);
    assert.equal(imported.plants, 0);
    assert.ok(Number(imported.read) >= report.tokens);
    const out = join(dir, 'backup.db');
    const backup = await json(['backup', '--out', out, '--json', '--db', db]);
    assert.equal(backup.out, out);
    assert.ok(existsSync(out) && Number(backup.bytes) > 0 && typeof backup.seconds === 'number');
  });
});
