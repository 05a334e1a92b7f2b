import { ApiProperty } from '@nestjs/swagger';

/** How every timestamp in a reply looks: UTC ISO 8601 with milliseconds. */
export const TIMESTAMP_PATTERN = '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}\\.\\d{3}Z$';

/** A reply field holding a timestamp, e.g. `2026-11-21T09:30:00.000Z`. */
export const ApiTimestampProperty = (description?: string) =>
  ApiProperty({
    type: 'string',
    format: 'date-time',
    pattern: TIMESTAMP_PATTERN,
    example: '2026-11-21T09:30:00.000Z',
    description,
  });
