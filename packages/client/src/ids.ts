/** A plant id: a bigint for any int64, or a number when it is a safe integer (at most 2^53-1 in size). */
export type PlantId = bigint | number;

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

/**
 * The decimal text of an id, checked before anything is sent. A number that
 * is not a safe integer has already lost digits (9007199254740993 reads as
 * ...992), so it is refused rather than sent as some other id.
 */
export function idText(id: PlantId): string {
  if (typeof id === 'bigint') {
    if (id < INT64_MIN || id > INT64_MAX) {
      throw new RangeError(`plant id ${id} is outside the int64 range ${INT64_MIN} to ${INT64_MAX}`);
    }
    return id.toString();
  }
  if (typeof id === 'number') {
    if (!Number.isSafeInteger(id)) {
      throw new RangeError(
        `plant id ${id} is not a safe integer: numbers beyond ±(2^53-1) are not exact, so pass the id as a bigint`,
      );
    }
    return String(id);
  }
  throw new TypeError(`plant id must be a bigint or a number, got ${typeof id}`);
}
