/**
 * Raw rows come back differently from each driver (mysql2: Date objects, numbers or numeric
 * strings, 0/1; better-sqlite3: text timestamps and 0/1). These turn them into the API's types.
 */

const SQL_DATETIME = /^(\d{4}-\d{2}-\d{2})[ T](\d{2}:\d{2}:\d{2}(?:\.\d+)?)Z?$/;
/** A DATETIME(3) as the database writes it: already the ISO form, but for the `T` and the `Z`. */
const SQL_DATETIME_MS = /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\.\d{3}$/;

/** UTC ISO 8601 with milliseconds, e.g. `2026-11-21T09:30:00.000Z`. */
export function toIsoTimestamp(value: unknown): string {
  if (typeof value === 'string' && SQL_DATETIME_MS.test(value)) {
    return `${value.slice(0, 10)}T${value.slice(11)}Z`;
  }
  if (value instanceof Date) return value.toISOString();
  const match = SQL_DATETIME.exec(String(value));
  if (match) return new Date(`${match[1]}T${match[2]}Z`).toISOString();
  return new Date(String(value)).toISOString();
}

export const toInteger = (value: unknown): number => Number(value);

export const toNullableInteger = (value: unknown): number | null =>
  value === null || value === undefined ? null : Number(value);

export const toBoolean = (value: unknown): boolean =>
  value === true || value === 1 || value === '1' || value === 'true';

export const toNullableString = (value: unknown): string | null =>
  value === null || value === undefined ? null : String(value);

/** `YYYY-MM-DD HH:MM:SS.mmm` in UTC: the text both MySQL DATETIME(3) and our SQLite rows use. */
export function toSqlDatetime(date: Date): string {
  return date.toISOString().replace('T', ' ').replace('Z', '');
}
