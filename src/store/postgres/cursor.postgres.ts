import { createCipheriv, createDecipheriv, createHmac, timingSafeEqual, type Cipher, type Decipher } from 'node:crypto';
import { InvalidCursorError } from '../store.js';

/** A position in an owner's list: created_at in microseconds since 1970 (UTC), then the id. */
export interface Position {
  at: bigint;
  id: bigint;
}

const BLOCK = 16;
const MAC = 16;

/**
 * A cursor is the position (created_at in microseconds since 1970, and the
 * id: one AES block) encrypted with the database's key, followed by an
 * HMAC-SHA-256 of that block and the owner. It reveals nothing (not the id,
 * not the time), cannot be forged or altered, and works only for the owner it
 * was issued to, on every instance that shares the database (the key lives
 * in it, see migrations.postgres.ts).
 */
export class PgCursorCodec {
  // ECB has no chaining, so one long-lived cipher (no padding, never
  // finalised) encrypts any number of single blocks.
  readonly #encrypt: Cipher;
  readonly #decrypt: Decipher;
  readonly #macKey: Buffer;

  /** `key`: 32 bytes; the first half encrypts, the second authenticates. */
  constructor(key: Buffer) {
    if (key.length !== 32) throw new Error(`the cursor key must be 32 bytes, not ${key.length}`);
    this.#encrypt = createCipheriv('aes-128-ecb', key.subarray(0, 16), null).setAutoPadding(false);
    this.#decrypt = createDecipheriv('aes-128-ecb', key.subarray(0, 16), null).setAutoPadding(false);
    this.#macKey = key.subarray(16);
  }

  #mac(block: Buffer, owner: string): Buffer {
    return createHmac('sha256', this.#macKey).update(block).update(owner, 'utf8').digest().subarray(0, MAC);
  }

  encode(owner: string, { at, id }: Position): string {
    const plain = Buffer.allocUnsafe(BLOCK);
    plain.writeBigInt64BE(at, 0);
    plain.writeBigInt64BE(id, 8);
    const block = this.#encrypt.update(plain);
    return Buffer.concat([block, this.#mac(block, owner)]).toString('base64url');
  }

  decode(owner: string, cursor: string): Position {
    const sealed = Buffer.from(cursor, 'base64url');
    if (sealed.length !== BLOCK + MAC || sealed.toString('base64url') !== cursor) throw new InvalidCursorError();
    const block = sealed.subarray(0, BLOCK);
    if (!timingSafeEqual(sealed.subarray(BLOCK), this.#mac(block, owner))) throw new InvalidCursorError();
    const plain = this.#decrypt.update(block);
    return { at: plain.readBigInt64BE(0), id: plain.readBigInt64BE(8) };
  }
}
