import { toIsoTimestamp, toNullableIsoTimestamp } from './row-values';

describe('toIsoTimestamp', () => {
  it('rewrites a DATETIME(3) read as text into the ISO form a Date would give', () => {
    const text = '2026-08-25 00:06:08.450';
    expect(toIsoTimestamp(text)).toBe('2026-08-25T00:06:08.450Z');
    expect(toIsoTimestamp(text)).toBe(new Date('2026-08-25T00:06:08.450Z').toISOString());
  });

  it.each([
    [new Date('2026-11-21T09:30:00.000Z'), '2026-11-21T09:30:00.000Z'],
    ['2026-11-21 09:30:00', '2026-11-21T09:30:00.000Z'],
    ['2026-11-21 09:30:00.5', '2026-11-21T09:30:00.500Z'],
    ['2026-11-21 09:30:00.123456', '2026-11-21T09:30:00.123Z'],
    ['2026-11-21T09:30:00.123Z', '2026-11-21T09:30:00.123Z'],
  ])('still reads %p (other precisions, Date values, ISO text)', (value, expected) => {
    expect(toIsoTimestamp(value)).toBe(expected);
  });
});

describe('toIsoTimestamp of text no date reads', () => {
  it('passes it on as stored rather than throwing (a page would answer 500)', () => {
    expect(toIsoTimestamp('1700000000')).toBe('1700000000');
    expect(toIsoTimestamp('yesterday')).toBe('yesterday');
  });
});

describe('toNullableIsoTimestamp', () => {
  it('keeps a NULL column null (toIsoTimestamp would throw on it) and reads a value as toIsoTimestamp', () => {
    expect(() => toIsoTimestamp(null)).toThrow(RangeError);
    expect(toNullableIsoTimestamp(null)).toBeNull();
    expect(toNullableIsoTimestamp(undefined)).toBeNull();
    expect(toNullableIsoTimestamp('2026-08-25 00:06:08.450')).toBe('2026-08-25T00:06:08.450Z');
  });
});
