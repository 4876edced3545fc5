/**
 * SPEC R1a: a counter or date of any numeric BSON type counts by its value, anything else as
 * nothing; a date the API serves is an RFC 3339 date-time or null.
 */
import { mongo }  from 'mongoose';
import { counterValue, dateValue, isoDate, numericValue } from '../src/document-values';

// The driver's BSON types, as documents deserialise them.
const { Decimal128, Double, Int32, Long } = mongo;

describe('document values (R1a)', () => {
  it.each([
    ['a number', 7, 7],
    ['a bigint', 7n, 7],
    ['a Double', new Double(2.5), 2.5],
    ['an Int32', new Int32(-3), -3],
    ['a Long', Long.fromNumber(9_000_000_000), 9_000_000_000],
    ['a Decimal128', Decimal128.fromString('12.75'), 12.75],
  ])('when a counter is %s, then it counts by its value', (_kind, value, expected) => {
    expect(numericValue(value)).toBe(expected);
    expect(counterValue(value)).toBe(expected);
  });

  it.each([
    ['a string', '12'],
    ['a boolean', true],
    ['null', null],
    ['an array', [3]],
    ['an object', { $gt: -1 }],
    ['NaN', NaN],
    ['an infinity', -Infinity],
    ['a Decimal128 NaN', Decimal128.fromString('NaN')],
    ['a Decimal128 infinity', Decimal128.fromString('Infinity')],
    ['a BSON value of another type', new mongo.ObjectId()],
    ['a Date', new Date(5)],
    // Objects that only claim a BSON type (another library's, or a hand-made one): no value.
    ['an Int32 whose value is no number', { _bsontype: 'Int32', valueOf: (): unknown => '5' }],
    ['a Long without toNumber', { _bsontype: 'Long', valueOf: (): unknown => 5 }],
    ['an object with a tag that is no string', { _bsontype: 1, valueOf: (): unknown => 5 }],
  ])('when a counter is %s, then it has no value and counts as 0', (_kind, value) => {
    expect(numericValue(value)).toBeNull();
    expect(counterValue(value)).toBe(0);
  });

  it('when a date is a Date or a number of any numeric type, then it is its epoch milliseconds; an invalid Date or a string is none', () => {
    expect(dateValue(new Date(86_400_000))).toBe(86_400_000);
    expect(dateValue(new Int32(1000))).toBe(1000);
    expect(dateValue(new Date(NaN))).toBeNull();
    expect(dateValue('2026-07-24')).toBeNull();
  });

  it('when a date is served, then it is an RFC 3339 date-time of a four-digit year, or null', () => {
    expect(isoDate(0)).toBe('1970-01-01T00:00:00.000Z');
    expect(isoDate(new Date('0000-01-01T00:00:00.000Z').getTime())).toBe('0000-01-01T00:00:00.000Z');
    expect(isoDate(new Date('9999-12-31T23:59:59.999Z').getTime())).toBe('9999-12-31T23:59:59.999Z');
    // Year -1 and 10000: toISOString would write "-000001-..." and "+010000-...", no date-time.
    expect(isoDate(new Date('0000-01-01T00:00:00.000Z').getTime() - 1)).toBeNull();
    expect(isoDate(new Date('9999-12-31T23:59:59.999Z').getTime() + 1)).toBeNull();
    expect(isoDate(8.64e15 + 1)).toBeNull();
    expect(isoDate(null)).toBeNull();
  });
});
