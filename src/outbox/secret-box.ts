import { createCipheriv, createDecipheriv, createHmac, randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { ConfigError, readOperatorFile } from '../config.js';

// Standard Webhooks secrets: "whsec_" and the base64 of the HMAC key.
const SECRET_PREFIX = 'whsec_';
const SECRET_BYTES = 32;
const KEY_BYTES = 32;
const IV_BYTES = 12;
const TAG_BYTES = 16;

/** A new signing secret: the raw HMAC key and its whsec_ form, shown to the user once. */
export function newSigningSecret(): { key: Buffer; text: string } {
  const key = randomBytes(SECRET_BYTES);
  return { key, text: SECRET_PREFIX + key.toString('base64') };
}

/**
 * Seals webhook signing secrets for storage. The signer needs the raw secret,
 * so it cannot be hashed like a token; it is encrypted (AES-256-GCM) with a
 * key that lives in a file outside the database, so a copy of the database
 * alone does not reveal it. The endpoint id is bound in as associated data: a
 * sealed secret moved to another row does not open.
 */
export class SecretBox {
  /** Names the key without revealing it; stored with each sealed secret. */
  readonly keyId: string;

  constructor(private readonly key: Buffer) {
    if (key.length !== KEY_BYTES) throw new Error(`a webhook key is ${KEY_BYTES} bytes, got ${key.length}`);
    this.keyId = createHmac('sha256', key).update('plant-store webhook key id').digest('hex').slice(0, 16);
  }

  seal(secret: Buffer, endpointId: string): Buffer {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv).setAAD(Buffer.from(endpointId));
    const sealed = Buffer.concat([cipher.update(secret), cipher.final()]);
    return Buffer.concat([iv, cipher.getAuthTag(), sealed]);
  }

  /** Throws when the secret was sealed with another key or for another endpoint, or was altered. */
  open(sealed: Buffer, endpointId: string): Buffer {
    const decipher = createDecipheriv('aes-256-gcm', this.key, sealed.subarray(0, IV_BYTES))
      .setAAD(Buffer.from(endpointId))
      .setAuthTag(sealed.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
    return Buffer.concat([decipher.update(sealed.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]);
  }
}

// The setting that names the key file (its default place follows --db).
const KEY_SETTING = '--webhook-key-file';

function parseKeyFile(path: string, text: string): SecretBox {
  const key = Buffer.from(text.trim(), 'base64');
  if (key.length !== KEY_BYTES || key.toString('base64') !== text.trim()) {
    throw new ConfigError(`${KEY_SETTING}: ${path} does not hold a webhook key (the base64 of ${KEY_BYTES} bytes)`);
  }
  return new SecretBox(key);
}

/** The key in `path`, or undefined when there is no such file yet. */
export function readKeyFile(path: string): SecretBox | undefined {
  const text = readOperatorFile(path, KEY_SETTING, { missingOk: true });
  return text === undefined ? undefined : parseKeyFile(path, text);
}

/**
 * The key in `path`, created on first use: 32 random bytes, base64, in a
 * file only its owner may read (0600). Created exclusively, so two commands
 * racing on a new file end up with the same key.
 */
export function readOrCreateKeyFile(path: string): { box: SecretBox; created: boolean } {
  const existing = readKeyFile(path);
  if (existing) return { box: existing, created: false };
  mkdirSync(dirname(path), { recursive: true });
  try {
    writeFileSync(path, randomBytes(KEY_BYTES).toString('base64') + '\n', { flag: 'wx', mode: 0o600 });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    return { box: parseKeyFile(path, readOperatorFile(path, KEY_SETTING)), created: false };
  }
  return { box: parseKeyFile(path, readOperatorFile(path, KEY_SETTING)), created: true };
}
