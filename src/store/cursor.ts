import {
  createCipheriv,
  createDecipheriv,
  createHmac,
  hkdfSync,
  timingSafeEqual,
  type Cipher,
  type Decipher,
} from 'node:crypto';
import { InvalidCursorError } from './store.js';

/**
 * A position in an owner's list, as two integers the store orders by: on
 * SQLite the row's seq (and 0), on PostgreSQL created_at in microseconds since
 * 1970 (UTC) and the id.
 */
export interface Position {
  at: bigint;
  id: bigint;
}

const BLOCK = 16;
const MAC = 16;

/**
 * The one list cursor format of every store: the position (one AES block)
 * encrypted with the store's key, followed by an HMAC-SHA-256 of that block
 * and the owner. It reveals nothing (not the id, the time or the row
 * number), cannot be forged or altered, and works only for the owner it was
 * issued to, on every process that shares the store (the key lives in it).
 */
export class CursorCodec {
  // ECB has no chaining, so one long-lived cipher (no padding, never
  // finalised) encrypts any number of single blocks; a new cipher per cursor
  // costs about as much as a whole page read.
  readonly #encrypt: Cipher;
  readonly #decrypt: Decipher;
  readonly #macKey: Buffer;

  /** `secret`: the store's cursor key; 32 bytes are used as they are (half encrypts, half authenticates), others are expanded. */
  constructor(secret: Buffer) {
    const key = secret.length === 32 ? secret : Buffer.from(hkdfSync('sha256', secret, '', 'plant-store cursor', 32));
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

  /** The position sealed in `cursor`; InvalidCursorError unless this codec issued it to `owner`. */
  decode(owner: string, cursor: string): Position {
    const sealed = Buffer.from(cursor, 'base64url');
    if (sealed.length !== BLOCK + MAC || sealed.toString('base64url') !== cursor) throw new InvalidCursorError();
    const block = sealed.subarray(0, BLOCK);
    if (!timingSafeEqual(sealed.subarray(BLOCK), this.#mac(block, owner))) throw new InvalidCursorError();
    const plain = this.#decrypt.update(block);
    return { at: plain.readBigInt64BE(0), id: plain.readBigInt64BE(8) };
  }
}
