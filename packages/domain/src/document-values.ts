/**
 * SPEC R1a: how a counter or a date of a video document counts, whatever the operators or other
 * services stored. One rule for the build (which reads raw BSON) and for the read path (which
 * reads deserialised documents): any numeric BSON type counts by its value; anything else does not.
 *
 * BSON values are recognised by their `_bsontype` tag, so the domain needs no driver.
 */

/** A finite number, or null: NaN and the infinities are not values. */
export function finiteOrNull(value: number): number | null {
  return Number.isFinite(value) ? value : null;
}

interface BsonValue {
  _bsontype: string;
  toString(): string;
  valueOf(): unknown;
  toNumber?(): number;
}

function isBsonValue(value: unknown): value is BsonValue {
  return typeof value === 'object' && value !== null && typeof (value as { _bsontype?: unknown })._bsontype === 'string';
}

/**
 * The value of a number of any numeric BSON type (double, int32, int64, Decimal128, and a JS
 * number or bigint as the driver promotes them), or null for anything else (string, boolean,
 * array, object, null, NaN, a date).
 */
export function numericValue(value: unknown): number | null {
  if (typeof value === 'number') return finiteOrNull(value);
  if (typeof value === 'bigint') return finiteOrNull(Number(value));
  if (!isBsonValue(value)) return null;
  switch (value._bsontype) {
    case 'Double':
    case 'Int32':
      return typeof value.valueOf() === 'number' ? finiteOrNull(value.valueOf() as number) : null;
    case 'Long':
      return typeof value.toNumber === 'function' ? finiteOrNull(value.toNumber()) : null;
    case 'Decimal128':
      // Decimal128's string is a decimal literal ("NaN", "Infinity" and "-0E+3" included).
      return finiteOrNull(Number(value.toString()));
    default:
      return null;
  }
}

/** A counter: its numeric value, 0 for anything else. */
export function counterValue(value: unknown): number {
  return numericValue(value) ?? 0;
}

/** A date in epoch milliseconds: a Date by its time, a number of any numeric BSON type by its value; null otherwise. */
export function dateValue(value: unknown): number | null {
  if (value instanceof Date) return finiteOrNull(value.getTime());
  return numericValue(value);
}

/**
 * The ISO form of epoch milliseconds, or null when it is no RFC 3339 date-time (the document's
 * `format: date-time`): beyond what a Date holds (±8.64e15 ms) or outside the years 0000-9999,
 * which toISOString writes with six digits and a sign.
 */
export function isoDate(ms: number | null): string | null {
  if (ms === null) return null;
  const date = new Date(ms);
  const year = date.getUTCFullYear();
  return year >= 0 && year <= 9999 ? date.toISOString() : null;
}
