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
 * more until the client has taken it (about two chunks in memory), each sent once its pace allows.
 */
export class ListingExport extends Readable {
  private pending?: Promise<readonly object[] | undefined>;
  private reading = false;
  private readonly stopped = new AbortController();
  private pace: (rows: number, stopped: AbortSignal) => Promise<void> = async () => undefined;

  /** `first`: read before the reply starts, so that its errors are problems; then `nextChunk`. */
  constructor(
    private readonly first: readonly object[],
    private readonly nextChunk: () => Promise<readonly object[] | undefined>,
  ) {
    super();
  }

  /** Spends each chunk's rows with `pace` before it is sent (the caller's budget). */
  pacedBy(pace: (rows: number, stopped: AbortSignal) => Promise<void>): this {
    this.pace = pace;
    return this;
  }

  override _read(): void {
    if (this.reading) return;
    this.reading = true;
    this.pending ??= this.paced(Promise.resolve(this.first));
    this.pending.then(
      (items) => {
        if (this.destroyed) return;
        if (!items) {
          this.push(null);
          return;
        }
        this.pending = this.paced(this.nextChunk());
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

  /** Closes once a read still running has ended (it holds a pooled connection until then). */
  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    this.stopped.abort();
    const settled = () => callback(error);
    void (this.pending ?? Promise.resolve()).then(settled, settled);
  }

  /** A chunk's rows once its pace lets them go (none: the export has ended). */
  private paced(read: Promise<readonly object[] | undefined>) {
    return read.then(async (items) => {
      if (!items?.length) return undefined;
      await this.pace(items.length, this.stopped.signal);
      return items;
    });
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
      query.cursor === undefined
        ? undefined
        : this.cursors.decode(walk.binding, query.cursor, walk.earlierBinding);
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
