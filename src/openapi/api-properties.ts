import { ApiProperty, type ApiPropertyOptions } from '@nestjs/swagger';

/** How every timestamp in a reply looks: UTC ISO 8601 with milliseconds. */
export const TIMESTAMP_PATTERN = '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}\\.\\d{3}Z$';

/** A reply field holding a timestamp, e.g. `2026-11-21T09:30:00.000Z` (or null, if `nullable`). */
export const ApiTimestampProperty = (description?: string, { nullable = false } = {}) =>
  ApiProperty({
    type: 'string',
    format: 'date-time',
    pattern: TIMESTAMP_PATTERN,
    example: '2026-11-21T09:30:00.000Z',
    description,
    ...(nullable ? { nullable } : {}),
  });

const PASS_THROUGH =
  'Known values are listed; any other value stored upstream is passed through unchanged, so handle unknown values.';

/**
 * A reply field whose list of values is not closed: replies may carry a value stored upstream that
 * the list lacks, passed through unchanged. Any string (`anyOf` the known values and any other),
 * so that a validator or a generated type does not refuse what the service sends.
 */
export const ApiOpenEnumProperty = (
  values: readonly string[],
  options: { description?: string; example: string | null; nullable?: boolean },
) =>
  ApiProperty({
    type: 'string',
    // `nullable` on the open branch too: a validator checks null against the branches as well.
    anyOf: [
      { type: 'string', enum: [...values] },
      { type: 'string', ...(options.nullable ? { nullable: true } : {}) },
    ],
    description: options.description ? `${options.description} ${PASS_THROUGH}` : PASS_THROUGH,
    example: options.example,
    ...(options.nullable ? { nullable: true } : {}),
  } as ApiPropertyOptions);
