import { Readable } from 'node:stream';

/**
 * A listing streamed as NDJSON: one item per line, read from the database a chunk at a time.
 * The next chunk is read while the current one is written (so the database and the renderer work
 * side by side), and no further chunk is read until the client has taken this one: memory stays
 * at about two chunks whatever the size of the export. Emits `rows` (a count) for each chunk.
 */
export class ListingExport extends Readable {
  private pending: Promise<readonly object[] | undefined>;
  private reading = false;

  /**
   * `first`: the first chunk, read before the reply starts, so that its errors are answered as
   * problems; `nextChunk`: the chunk after the last one, `undefined` at the end.
   */
  constructor(
    first: readonly object[],
    private readonly nextChunk: () => Promise<readonly object[] | undefined>,
  ) {
    super();
    this.pending = Promise.resolve(first.length > 0 ? first : undefined);
  }

  override _read(): void {
    if (this.reading) return;
    this.reading = true;
    this.pending.then(
      (items) => {
        if (this.destroyed) return;
        if (!items) {
          this.push(null);
          return;
        }
        this.pending = this.nextChunk();
        // Awaited by the next _read; a rejection meanwhile must not count as unhandled.
        this.pending.catch(() => undefined);
        this.reading = false;
        this.emit('rows', items.length);
        let lines = '';
        for (const item of items) lines += `${JSON.stringify(item)}\n`;
        this.push(lines);
      },
      (error: Error) => this.destroy(error),
    );
  }
}

/**
 * Rows an NDJSON export has sent so far, kept on `response.locals` by the export: the request
 * spends one more request of budget per `rowsPerRequest` of them when it ends.
 */
export const EXPORTED_ROWS = 'exportedRows';
