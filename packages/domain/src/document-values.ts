/**
 * SPEC R1a: how a video's counter or date counts, whatever was stored: one rule for the build (raw
 * BSON) and the read path. Any numeric BSON type counts by its value (recognised by `_bsontype`,
 * so no driver); anything else does not.
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

/** The value of any numeric BSON type (or a JS number or bigint), else null (string, date, NaN, ...). */
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

/** The ISO form of epoch ms, or null when no RFC 3339 date-time (beyond a Date, or outside years 0000-9999). */
export function isoDate(ms: number | null): string | null {
  if (ms === null) return null;
  const date = new Date(ms);
  const year = date.getUTCFullYear();
  return year >= 0 && year <= 9999 ? date.toISOString() : null;
}
