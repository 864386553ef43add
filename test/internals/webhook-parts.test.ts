// The pieces of webhook delivery on their own: the address guard, the retry
// schedule, Retry-After, the event body and the sealing of secrets. No
// network traffic: the guard is judged on addresses alone.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from '../helpers/requirements.js';
import { Webhook } from 'standardwebhooks';
import { addressRefusal, checkLiteralHost } from '../../src/outbox/address-guard.js';
import { eventBody, signedHeaders } from '../../src/outbox/event-body.js';
import { MAX_ATTEMPTS, nominalDelayMs, retryAfterMs, retryDelayMs } from '../../src/outbox/retry-schedule.js';
import { SecretBox, newSigningSecret, readKeyFile, readOrCreateKeyFile } from '../../src/outbox/secret-box.js';

describe('address guard', () => {
  it('refuses loopback, private, link-local, metadata and special ranges; passes public unicast', () => {
    const refused: Record<string, string> = {
      '127.0.0.1': 'loopback',
      '127.8.9.10': 'loopback',
      '::1': 'loopback',
      '10.1.2.3': 'private',
      '172.16.0.1': 'private',
      '172.31.255.254': 'private',
      '192.168.1.1': 'private',
      '169.254.169.254': 'linkLocal',
      'fe80::1': 'linkLocal',
      'fd00:ec2::254': 'uniqueLocal',
      '100.100.100.200': 'carrierGradeNat',
      '0.0.0.0': 'unspecified',
      '::': 'unspecified',
      '224.0.0.1': 'multicast',
      '255.255.255.255': 'broadcast',
      '::ffff:127.0.0.1': 'loopback',
      '::ffff:10.0.0.1': 'private',
      '::ffff:169.254.169.254': 'linkLocal',
      '64:ff9b::a00:1': 'rfc6052',
      '2002:a00:1::': '6to4',
      '2001:db8::1': 'reserved',
    };
    for (const [address, range] of Object.entries(refused)) assert.equal(addressRefusal(address), range, address);
    for (const address of ['93.184.216.34', '8.8.8.8', '172.32.0.1', '2606:4700:4700::1111', '::ffff:8.8.8.8'])
      assert.equal(addressRefusal(address), undefined, address);
  });

  it('checks IP-literal hosts, bracketed IPv6 included', () => {
    assert.throws(() => checkLiteralHost('[::1]'), /refused: ::1, a loopback address/);
    assert.throws(() => checkLiteralHost('169.254.169.254'), /linkLocal/);
    assert.doesNotThrow(() => checkLiteralHost('example.com'));
    assert.doesNotThrow(() => checkLiteralHost('8.8.8.8'));
  });
});

describe('retry schedule', () => {
  it('retries within 5 s first, then exponentially, over about a day, then gives up', () => {
    const first = retryDelayMs(1)!;
    assert.ok(first <= 5_000 && first >= 3_750, `first retry ${first} ms`);
    assert.equal(
      retryDelayMs(1, () => 0),
      5_000,
    );
    assert.equal(
      retryDelayMs(1, () => 1),
      3_750,
    );
    for (let n = 2; n < MAX_ATTEMPTS; n++) assert.ok(nominalDelayMs(n) >= nominalDelayMs(n - 1));
    let latest = 0;
    let earliest = 0;
    for (let n = 1; n < MAX_ATTEMPTS; n++) {
      latest += retryDelayMs(n, () => 0)!;
      earliest += retryDelayMs(n, () => 1)!;
    }
    const hours = (ms: number) => ms / 3600_000;
    assert.ok(
      hours(latest) > 20 && hours(latest) < 26,
      `last attempt at most ${hours(latest).toFixed(1)} h after the first`,
    );
    assert.ok(hours(earliest) > 15, `and at least ${hours(earliest).toFixed(1)} h`);
    assert.equal(retryDelayMs(MAX_ATTEMPTS), undefined);
  });

  it('reads Retry-After as seconds or as an HTTP date', () => {
    const now = Date.parse('2026-01-01T00:00:00Z');
    assert.equal(retryAfterMs('120', now), 120_000);
    assert.equal(retryAfterMs(' 7 ', now), 7_000);
    assert.equal(retryAfterMs('Thu, 01 Jan 2026 00:01:00 GMT', now), 60_000);
    assert.equal(retryAfterMs('Wed, 31 Dec 2025 00:00:00 GMT', now), 0, 'a date in the past: now');
    assert.equal(retryAfterMs('99999999', now), 24 * 3600_000, 'capped at a day');
    assert.equal(retryAfterMs('soon', now), undefined);
    assert.equal(retryAfterMs('-5', now), undefined);
    assert.equal(retryAfterMs(undefined, now), undefined);
  });
});

describe('event body and signature', () => {
  it('writes int64 ids as exact JSON numbers, tag only when stored, and is signed as Standard Webhooks verifies', () => {
    const at = Date.parse('2026-03-04T05:06:07.089Z');
    const created = eventBody({
      type: 'plant.created',
      plantId: 2n ** 63n - 1n,
      name: 'Fern "x" 🌿',
      tag: null,
      occurredAt: at,
    });
    assert.equal(
      created,
      '{"type":"plant.created","timestamp":"2026-03-04T05:06:07.089Z","data":{"id":9223372036854775807,"name":"Fern \\"x\\" 🌿"}}',
    );
    const deleted = eventBody({ type: 'plant.deleted', plantId: -(2n ** 63n), name: null, tag: null, occurredAt: at });
    assert.equal(
      deleted,
      '{"type":"plant.deleted","timestamp":"2026-03-04T05:06:07.089Z","data":{"id":-9223372036854775808}}',
    );
    const tagged = eventBody({ type: 'plant.created', plantId: 1n, name: 'a', tag: '', occurredAt: at });
    assert.match(tagged, /"data":\{"id":1,"name":"a","tag":""\}/);

    const secret = newSigningSecret();
    const headers = signedHeaders(secret.key, 'msg_1', created);
    assert.deepEqual(new Webhook(secret.text).verify(created, headers), JSON.parse(created));
    assert.throws(() => new Webhook(secret.text).verify(created.replace('Fern', 'Fern!'), headers));
    assert.throws(() => new Webhook(newSigningSecret().text).verify(created, headers));
  });
});

describe('sealed secrets', () => {
  const dir = mkdtempSync(join(tmpdir(), 'plant-store-secret-box-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('opens only with the same key and for the same endpoint', () => {
    const { box, created } = readOrCreateKeyFile(join(dir, 'sub', 'k'));
    assert.equal(created, true);
    assert.equal(statSync(join(dir, 'sub', 'k')).mode & 0o777, 0o600);
    const secret = newSigningSecret();
    const sealed = box.seal(secret.key, 'wh_1');
    assert.deepEqual(box.open(sealed, 'wh_1'), secret.key);
    assert.throws(() => box.open(sealed, 'wh_2'), 'bound to its endpoint');
    const other = new SecretBox(Buffer.alloc(32, 7));
    assert.notEqual(other.keyId, box.keyId);
    assert.throws(() => other.open(sealed, 'wh_1'), 'another key does not open it');
    const again = readOrCreateKeyFile(join(dir, 'sub', 'k'));
    assert.equal(again.created, false);
    assert.equal(again.box.keyId, box.keyId);
  });

  it('a missing key file is no key; a malformed one is an error', () => {
    assert.equal(readKeyFile(join(dir, 'absent')), undefined);
    writeFileSync(join(dir, 'bad'), 'not a key\n');
    assert.throws(() => readKeyFile(join(dir, 'bad')), /does not hold a webhook key/);
  });
});
