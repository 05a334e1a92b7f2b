import { STATUS_CODES } from 'node:http';

/** RFC 9110's phrases where Node still has the older ones (RFC 7231's). */
const RFC_9110: Record<number, string> = {
  413: 'Content Too Large',
  422: 'Unprocessable Content',
};

/** The reason phrase of `status`: a problem's `title` with type `about:blank` (RFC 9457 4.2.1). */
export const reasonPhrase = (status: number): string =>
  RFC_9110[status] ?? STATUS_CODES[status] ?? 'Error';
