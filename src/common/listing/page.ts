/** One page of a listing, as services return it; the envelope interceptor renders it. */
export class Page<T> {
  constructor(
    readonly items: T[],
    readonly page: number,
    readonly limit: number,
    /** Records matching the request's filters and scope. */
    readonly total: number,
    /** The opaque cursor of `Link: rel="next"`, when the walk goes on. */
    readonly nextCursor?: string,
  ) {}

  get pageCount(): number {
    return Math.ceil(this.total / this.limit);
  }
}
