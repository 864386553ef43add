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
 *
 * A cursor of a filtered list (`?tag=`) is authenticated with a key of its
 * own over the block, the owner and the tag, so it works only in the list it
 * came from: not in the unfiltered list, nor under another tag, and an
 * unfiltered cursor works in no filtered list. Unfiltered cursors keep the
 * format they always had, so those issued before filters existed still work.
 */
export class CursorCodec {
  // ECB has no chaining, so one long-lived cipher (no padding, never
  // finalised) encrypts any number of single blocks; a new cipher per cursor
  // costs about as much as a whole page read.
  readonly #encrypt: Cipher;
  readonly #decrypt: Decipher;
  readonly #macKey: Buffer;
  readonly #filterMacKey: Buffer;

  /** `secret`: the store's cursor key; 32 bytes are used as they are (half encrypts, half authenticates), others are expanded. */
  constructor(secret: Buffer) {
    const key = secret.length === 32 ? secret : Buffer.from(hkdfSync('sha256', secret, '', 'plant-store cursor', 32));
    this.#encrypt = createCipheriv('aes-128-ecb', key.subarray(0, 16), null).setAutoPadding(false);
    this.#decrypt = createDecipheriv('aes-128-ecb', key.subarray(0, 16), null).setAutoPadding(false);
    this.#macKey = key.subarray(16);
    this.#filterMacKey = createHmac('sha256', this.#macKey).update('plant-store cursor: tag filter').digest();
  }

  // Owners and tags hold no NUL (both are validated), so owner NUL tag names one list.
  #mac(block: Buffer, owner: string, tag: string | undefined): Buffer {
    const mac =
      tag === undefined
        ? createHmac('sha256', this.#macKey).update(block).update(owner, 'utf8')
        : createHmac('sha256', this.#filterMacKey).update(block).update(`${owner}\0${tag}`, 'utf8');
    return mac.digest().subarray(0, MAC);
  }

  /** A cursor for `owner`'s list, or with `tag` for the list of their plants with that tag. */
  encode(owner: string, { at, id }: Position, tag?: string): string {
    const plain = Buffer.allocUnsafe(BLOCK);
    plain.writeBigInt64BE(at, 0);
    plain.writeBigInt64BE(id, 8);
    const block = this.#encrypt.update(plain);
    return Buffer.concat([block, this.#mac(block, owner, tag)]).toString('base64url');
  }

  /** The position sealed in `cursor`; InvalidCursorError unless this codec issued it to `owner`, for the same `tag`. */
  decode(owner: string, cursor: string, tag?: string): Position {
    const sealed = Buffer.from(cursor, 'base64url');
    if (sealed.length !== BLOCK + MAC || sealed.toString('base64url') !== cursor) throw new InvalidCursorError();
    const block = sealed.subarray(0, BLOCK);
    if (!timingSafeEqual(sealed.subarray(BLOCK), this.#mac(block, owner, tag))) throw new InvalidCursorError();
    const plain = this.#decrypt.update(block);
    return { at: plain.readBigInt64BE(0), id: plain.readBigInt64BE(8) };
  }
}
