import { isIP } from 'node:net';
import { applyDecorators } from '@nestjs/common';
import { ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsOptional, ValidateBy, ValidationOptions } from 'class-validator';

/**
 * Decorators for query-string parameters. Each one parses the raw string strictly, validates it
 * with a message that completes "<parameter> …", and documents the parameter in OpenAPI, so a
 * listing's DTO is a list of one-line declarations.
 */

const DIGITS = /^\d{1,16}$/;
const INT32_MAX = 2 ** 31 - 1;

/** Leaves anything that is not plain digits as it was, so the validator rejects it. */
const toInteger = ({ value }: { value: unknown }) =>
  typeof value === 'string' && DIGITS.test(value) ? Number(value) : value;

export interface IntegerParamOptions {
  min: number;
  /** A number, or a function for bounds that come from configuration. */
  max: number | (() => number);
  default?: number;
  description?: string;
  example?: number;
}

export function IntegerParam(options: IntegerParamOptions): PropertyDecorator {
  const max = () => (typeof options.max === 'function' ? options.max() : options.max);
  return applyDecorators(
    IsOptional(),
    ApiPropertyOptional({
      type: 'integer',
      format: max() <= INT32_MAX ? 'int32' : 'int64',
      minimum: options.min,
      maximum: max(),
      default: options.default,
      description: options.description,
      example: options.example,
    }),
    Transform(toInteger),
    ValidateBy({
      name: 'integerParam',
      validator: {
        validate: (value: unknown) =>
          typeof value === 'number' &&
          Number.isSafeInteger(value) &&
          value >= options.min &&
          value <= max(),
        defaultMessage: () => `must be an integer between ${options.min} and ${max()}`,
      },
    }),
  );
}

/** A positive database id (1 … 2^53-1). */
export const IdParam = (description?: string) =>
  IntegerParam({ min: 1, max: Number.MAX_SAFE_INTEGER, description });

const PARAM_VALUES = Symbol('query-param:values');

/** Every value a parameter accepts, when they are few (`EnumParam`, `BooleanParam`). */
export function paramValues(target: object, property: string): readonly unknown[] | undefined {
  return Reflect.getMetadata(PARAM_VALUES, target, property) as readonly unknown[] | undefined;
}

const acceptsOnly =
  (values: readonly unknown[]): PropertyDecorator =>
  (target, property) =>
    Reflect.defineMetadata(PARAM_VALUES, values, target, property);

export function EnumParam(values: readonly string[], description?: string): PropertyDecorator {
  const allowed = new Set(values);
  return applyDecorators(
    IsOptional(),
    acceptsOnly(values),
    ApiPropertyOptional({ type: 'string', enum: [...values], description }),
    ValidateBy({
      name: 'enumParam',
      validator: {
        validate: (value: unknown) => typeof value === 'string' && allowed.has(value),
        defaultMessage: () => `must be one of: ${values.join(', ')}`,
      },
    }),
  );
}

export function BooleanParam(description?: string): PropertyDecorator {
  return applyDecorators(
    IsOptional(),
    acceptsOnly([true, false]),
    ApiPropertyOptional({ type: 'boolean', description }),
    Transform(({ value }) => (value === 'true' ? true : value === 'false' ? false : value)),
    ValidateBy({
      name: 'booleanParam',
      validator: {
        validate: (value: unknown) => typeof value === 'boolean',
        defaultMessage: () => 'must be true or false',
      },
    }),
  );
}

// Date, or date and time with an optional fraction (any digits) and a required zone (Z or ±hh:mm).
const ISO_TIMESTAMP =
  /^\d{4}-\d{2}-\d{2}(?:T\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:\d{2}))?$/;

/** The instants a DATETIME column holds: a bound outside them cannot be compared with a row. */
const EARLIEST_TIMESTAMP = Date.parse('0001-01-01T00:00:00.000Z');
const LATEST_TIMESTAMP = Date.parse('9999-12-31T23:59:59.999Z');

/** A well-formed timestamp outside EARLIEST_TIMESTAMP..LATEST_TIMESTAMP (after its zone and rounding). */
class TimestampOutOfRange {}

function parseTimestamp(raw: unknown): unknown {
  // RFC 3339 (OpenAPI's date-time) allows a lower-case `t` and `z`.
  const value = typeof raw === 'string' ? raw.toUpperCase() : raw;
  if (typeof value !== 'string' || !ISO_TIMESTAMP.test(value)) return raw;
  // A leap second (`23:59:60Z`, RFC 3339) lies between the rows of 23:59:59.999 and of the next
  // minute: it bounds them as that minute's start does, as a finer instant does the next millisecond.
  const leap = /T\d{2}:\d{2}:60(?:\.\d+)?/.test(value);
  const read = leap ? value.replace(/:60(?:\.\d+)?/, ':59') : value;
  const parsed = new Date(read.length === 10 ? `${read}T00:00:00Z` : read);
  const date = leap ? new Date(parsed.getTime() + 1000) : parsed;
  if (Number.isNaN(date.getTime())) return raw;
  if (leap && date.getUTCSeconds() + date.getUTCMinutes() + date.getUTCHours() !== 0) return raw;
  // Reject calendar overflow such as 2026-02-31, which Date would silently roll over.
  const [year, month, day] = value.slice(0, 10).split('-').map(Number);
  const offsetMinutes = zoneOffsetMinutes(value);
  const local = new Date(parsed.getTime() + offsetMinutes * 60_000);
  if (
    local.getUTCFullYear() !== year ||
    local.getUTCMonth() + 1 !== month ||
    local.getUTCDate() !== day
  ) {
    return raw;
  }
  // Rows keep milliseconds: a finer instant bounds them as the next millisecond does (Date cuts it).
  const finer = leap ? undefined : /\.\d{3}(\d+)/.exec(value)?.[1];
  const bound = finer && /[1-9]/.test(finer) ? new Date(date.getTime() + 1) : date;
  const time = bound.getTime();
  return time < EARLIEST_TIMESTAMP || time > LATEST_TIMESTAMP ? new TimestampOutOfRange() : bound;
}

function zoneOffsetMinutes(value: string): number {
  const match = /([+-])(\d{2}):(\d{2})$/.exec(value);
  if (!match || value.length === 10) return 0;
  const minutes = Number(match[2]) * 60 + Number(match[3]);
  return match[1] === '+' ? minutes : -minutes;
}

const TIMESTAMP_FORMS =
  'An ISO 8601 date-time with a time zone (`2026-11-21T09:30:00Z`, `2026-11-21T10:30:00+01:00`), ' +
  'or a date alone (`2026-11-21`), which means its midnight UTC. Rows keep milliseconds: an instant ' +
  'finer than that bounds them as the next millisecond does, and a leap second (`23:59:60Z`) as the ' +
  'next minute does. From 0001-01-01T00:00:00Z to 9999-12-31T23:59:59.999Z.';

export function TimestampParam(description?: string): PropertyDecorator {
  return applyDecorators(
    IsOptional(),
    // A date alone is accepted too (its midnight UTC): documented as such, not only as date-time.
    ApiPropertyOptional({
      type: 'string',
      anyOf: [
        { type: 'string', format: 'date-time' },
        { type: 'string', format: 'date' },
      ],
      description: `${description ? `${description} ` : ''}${TIMESTAMP_FORMS}`,
      example: '2026-11-21T09:30:00.000Z',
    }),
    Transform(({ value }) => parseTimestamp(value)),
    ValidateBy({
      name: 'timestampParam',
      validator: {
        validate: (value: unknown) => value instanceof Date,
        defaultMessage: (args) =>
          args?.value instanceof TimestampOutOfRange
            ? 'must lie between 0001-01-01T00:00:00Z and 9999-12-31T23:59:59.999Z'
            : 'must be an ISO 8601 timestamp with a time zone, e.g. 2026-11-21T09:30:00Z, or a date, e.g. 2026-11-21' +
              // `+01:00` sent unencoded arrives as ` 01:00`: a query string's `+` is a space.
              (typeof args?.value === 'string' && /T[\d:.]+ \d{2}(:?\d{2})?$/i.test(args.value)
                ? "; send the offset's + as %2B (a bare + in a URL means a space)"
                : ''),
      },
    }),
  );
}

export interface StringParamOptions {
  minLength?: number;
  maxLength: number;
  description?: string;
  pattern?: RegExp;
  /** A check the pattern cannot express (an address's octets); failing it says `patternMessage`. */
  check?: (value: string) => boolean;
  patternMessage?: string;
}

export function StringParam(options: StringParamOptions): PropertyDecorator {
  const minLength = options.minLength ?? 1;
  return applyDecorators(
    IsOptional(),
    ApiPropertyOptional({
      type: 'string',
      minLength,
      maxLength: options.maxLength,
      pattern: options.pattern?.source,
      description: options.description,
    }),
    ValidateBy({
      name: 'stringParam',
      validator: {
        validate: (value: unknown) =>
          typeof value === 'string' &&
          [...value].length >= minLength &&
          [...value].length <= options.maxLength &&
          (!options.pattern || options.pattern.test(value)) &&
          (!options.check || options.check(value)),
        defaultMessage: (args) => {
          const value = args?.value;
          if (
            typeof value === 'string' &&
            options.patternMessage &&
            (options.pattern?.test(value) === false || options.check?.(value) === false)
          ) {
            return options.patternMessage;
          }
          return `must be a string of ${minLength} to ${options.maxLength} characters`;
        },
      },
    }),
  );
}

export type { ValidationOptions };

/**
 * An IPv4 or IPv6 address, an IPv6 one with its zone too (`fe80::1%eth0`, sent as `%25eth0`), as
 * stored upstream, compared in any case (the column's collation). Read in lower case (RFC 5952):
 * one spelling, one cached total.
 */
export function IpAddressParam(description: string): PropertyDecorator {
  return applyDecorators(
    StringParam({
      maxLength: 45,
      pattern: /^(?:[0-9A-Fa-f.:]+|[0-9A-Fa-f.]*:[0-9A-Fa-f.:]*%[0-9A-Za-z._~-]+)$/,
      check: (value) => isIP(value) !== 0,
      patternMessage: 'must be an IPv4 or IPv6 address',
      description,
    }),
    Transform(({ value }: { value: unknown }) =>
      typeof value === 'string'
        ? value.replace(/^[^%]*/, (address) => address.toLowerCase())
        : value,
    ),
  );
}

/**
 * An e-mail address: any text without white space, control or format characters (NUL, a
 * zero-width space), which MySQL's collations ignore and SQLite does not.
 */
export const EmailParam = (description: string): PropertyDecorator =>
  StringParam({
    maxLength: 320,
    pattern: /^[^\s\p{Cc}\p{Cf}]+$/u,
    patternMessage: 'must be an e-mail address, without spaces or control characters',
    description,
  });
