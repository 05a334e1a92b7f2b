/**
 * Raw rows come back differently from each driver (mysql2: Date objects, numbers or numeric
 * strings, 0/1; better-sqlite3: text timestamps and 0/1). These turn them into the API's types.
 */

const SQL_DATETIME = /^(\d{4}-\d{2}-\d{2})[ T](\d{2}:\d{2}:\d{2}(?:\.\d+)?)Z?$/;
/** `YYYY-MM-DD HH:MM:SS.mmm`: DATETIME(3) as text, the form every page's timestamps come in. */
const SQL_DATETIME_MS_LENGTH = 23;

/** UTC ISO 8601 with milliseconds, e.g. `2026-11-21T09:30:00.000Z`. */
export function toIsoTimestamp(value: unknown): string {
  if (value instanceof Date) return value.toISOString();
  // DATETIME(3) text, by the positions of its space and dot: already the ISO form but for the
  // `T` and the `Z`, so spliced, with no Date to build and format again and no regex match
  // (whose array and captures a page of 100 rows would build 100 times, about 100 ns a value).
  if (
    typeof value === 'string' &&
    value.length === SQL_DATETIME_MS_LENGTH &&
    value[10] === ' ' &&
    value[19] === '.'
  ) {
    return `${value.slice(0, 10)}T${value.slice(11)}Z`;
  }
  const match = SQL_DATETIME.exec(String(value));
  if (match) {
    const [, date, time] = match;
    return new Date(`${date}T${time}Z`).toISOString();
  }
  const at = new Date(String(value));
  // Text no date reads (a writer's epoch seconds in SQLite): passed on as stored, not a 500.
  return Number.isNaN(at.getTime()) && typeof value === 'string' ? value : at.toISOString();
}

/** An item's timestamp as `toIsoTimestamp` splices DATETIME(3) text. */
const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const SQL_DATETIME_MS = /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\.\d{3}$/;

/**
 * `toIsoTimestamp`'s splice undone: the DATETIME(3) text an item's timestamp was read as, a date no
 * calendar has (`2026-00-10`) too; anything else (a stored text no date reads) as it is.
 */
export const sqlDatetimeText = (value: string): string =>
  ISO_MS.test(value) ? `${value.slice(0, 10)} ${value.slice(11, 23)}` : value;

/** The instant of DATETIME(3) text in ms; undefined for other text or a date no calendar has. */
export function instantOfSqlDatetime(value: string): number | undefined {
  if (!SQL_DATETIME_MS.test(value)) return undefined;
  const iso = `${value.replace(' ', 'T')}Z`;
  const at = Date.parse(iso);
  // Not 31 February, which Date.parse takes for 3 March.
  return !Number.isNaN(at) && new Date(at).toISOString() === iso ? at : undefined;
}

/** A nullable timestamp column: null stays null, anything else as `toIsoTimestamp`. */
export const toNullableIsoTimestamp = (value: unknown): string | null =>
  value === null || value === undefined ? null : toIsoTimestamp(value);

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
