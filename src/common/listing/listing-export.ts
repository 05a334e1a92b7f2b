import { Readable } from 'node:stream';
import { Injectable } from '@nestjs/common';
import type { Principal } from '../auth/principal';
import { ProblemException } from '../problem-details/problem.exception';
import { ListingCursors } from './listing-cursor';
import type { ListingQuery } from './listing-query.dto';
import { after, ListingWalks, positionAfter } from './listing-walk';
import type { ListingRepository } from './listing.repository';

/** Rows an export reads per statement. */
const EXPORT_CHUNK_ROWS = 1000;

/**
 * A listing streamed as NDJSON, read a chunk at a time: the next while this one is written, none
 * more until the client has taken it (about two chunks in memory) and its pace allows.
 */
export class ListingExport extends Readable {
  private pending: Promise<readonly object[] | undefined>;
  private reading = false;
  private pace: (rows: number) => Promise<void> = async () => undefined;

  /** `first`: read before the reply starts, so that its errors are problems; then `nextChunk`. */
  constructor(
    first: readonly object[],
    private readonly nextChunk: () => Promise<readonly object[] | undefined>,
  ) {
    super();
    this.pending = Promise.resolve(first.length > 0 ? first : undefined);
  }

  /** Spends each chunk's rows with `pace` before the next chunk is read (the caller's budget). */
  pacedBy(pace: (rows: number) => Promise<void>): this {
    this.pace = pace;
    return this;
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
        this.pending = this.pace(items.length).then(() =>
          this.destroyed ? undefined : this.nextChunk(),
        );
        // Awaited by the next _read; a rejection meanwhile must not count as unhandled.
        this.pending.catch(() => undefined);
        this.reading = false;
        let lines = '';
        for (const item of items) lines += `${JSON.stringify(item)}\n`;
        this.push(lines);
      },
      (error: Error) => this.destroy(error),
    );
  }
}

/** Every matching row (up to `limit`) as an NDJSON stream, read in keyset chunks. */
@Injectable()
export class ListingExporter {
  constructor(
    private readonly walks: ListingWalks,
    private readonly cursors: ListingCursors,
  ) {}

  async export<TItem extends { id: number }>(
    repository: ListingRepository<TItem>,
    query: ListingQuery,
    principal: Principal,
  ): Promise<ListingExport> {
    if (query.page !== undefined) {
      throw ProblemException.badRequest([
        {
          parameter: 'page',
          message: 'is not used by an export, which streams every matching row (limit caps them)',
        },
      ]);
    }
    const walk = this.walks.of(repository, query, principal, EXPORT_CHUNK_ROWS);
    let position =
      query.cursor === undefined ? undefined : this.cursors.decode(walk.binding, query.cursor);
    let remaining = query.limit ?? Number.POSITIVE_INFINITY;
    let ended = false;
    const read = async (): Promise<TItem[] | undefined> => {
      if (ended || remaining <= 0) return undefined;
      const rows = Math.min(EXPORT_CHUNK_ROWS, remaining);
      const from = position ? after(walk, position) : walk.criteria;
      const { items, completeAsOf } = await repository.findForward(
        from,
        0,
        rows,
        this.walks.options,
      );
      const shown = this.walks.heldBack(walk, items, completeAsOf);
      ended = shown.length < rows;
      remaining -= shown.length;
      const last = shown.at(-1);
      if (last) position = positionAfter(walk, last, 0);
      return shown.length > 0 ? shown : undefined;
    };
    return new ListingExport((await read()) ?? [], read);
  }
}
