import { hash } from 'node:crypto';

/** A weak ETag (the same for every content coding) of the body and the total the headers carry. */
export function entityTag(body: string, total: number): string {
  // The one-shot digest: no Hash object per reply (the same bytes as updating one with each part).
  return `W/"${hash('sha256', `${body}\n${total}`, 'base64url').slice(0, 32)}"`;
}

/** RFC 9110 §13.1.2: `*`, or any listed tag equal to `tag` under weak comparison. */
export function ifNoneMatchHits(ifNoneMatch: string | undefined, tag: string): boolean {
  if (!ifNoneMatch) return false;
  if (ifNoneMatch.trim() === '*') return true;
  const opaque = tag.replace(/^W\//, '');
  return ifNoneMatch
    .split(',')
    .some((candidate) => candidate.trim().replace(/^W\//, '') === opaque);
}
