import {
  CallHandler,
  ExecutionContext,
  Inject,
  Injectable,
  Logger,
  NestInterceptor,
  Optional,
  StreamableFile,
} from '@nestjs/common';
import type { Request, Response } from 'express';
import { map, Observable } from 'rxjs';
import { NotModified } from '../problem-details/problem.exception';
import { EXPORT_BUDGET, ExportBudget } from './export-budget';
import { ListingExport } from './listing-export';
import { NDJSON } from './listing-format.decorator';
import { entityTag, ifNoneMatchHits } from '../http/entity-tag';
import { pathAndQuery } from '../http/request-target';
import { Page } from './page';

/** What a listing reply depends on besides its URL: the token (its scope) and the format asked for. */
const VARIES_WITH = 'Authorization, Accept';

/**
 * Renders a `Page` as the `{data, pagination}` envelope with X-Total-Count, Link, Cache-Control and
 * its ETag, and answers `If-None-Match` whatever Cache-Control the request carries (Express's
 * `req.fresh` would not: fetch() sends `no-cache` with every conditional request).
 */
@Injectable()
export class PageEnvelopeInterceptor implements NestInterceptor {
  private readonly logger = new Logger('ListingExport');

  constructor(@Optional() @Inject(EXPORT_BUDGET) private readonly budget?: ExportBudget) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    return next.handle().pipe(
      map((result: unknown) => {
        const http = context.switchToHttp();
        const response = http.getResponse<Response>();
        const request = http.getRequest<Request>();
        if (result instanceof ListingExport) return this.stream(result, request, response);
        if (!(result instanceof Page)) return result;
        response.setHeader('X-Total-Count', String(result.total));
        const link = linkHeader(pathAndQuery(request.originalUrl), result);
        if (link) response.setHeader('Link', link);
        // Caches may keep it (per user) but must revalidate it each time: the ETag makes that cheap.
        response.setHeader('Cache-Control', 'private, no-cache');
        // The page depends on the token (its organization scope), not only on the URL.
        response.vary(VARIES_WITH);
        // Serialized here, once: the ETag hashes the very text that is sent.
        const body = JSON.stringify(toEnvelope(result));
        const tag = entityTag(body, result.total);
        response.setHeader('ETag', tag);
        if (ifNoneMatchHits(request.headers['if-none-match'], tag)) {
          // Its 200 varies with Accept-Encoding too (compression's), and a 304 carries that Vary.
          response.vary('Accept-Encoding');
          throw new NotModified();
        }
        response.setHeader('Content-Type', 'application/json; charset=utf-8');
        return body;
      }),
    );
  }

  /** An export as NDJSON: a failure after its first bytes destroys the connection (no final chunk). */
  private stream(rows: ListingExport, request: Request, response: Response): StreamableFile {
    response.setHeader('Cache-Control', 'private, no-store');
    response.vary(VARIES_WITH);
    if (this.budget) rows.pacedBy(this.budget.paceOf(request));
    // Headers go out as the stream starts: its first rows may wait for the budget's next window.
    rows.once('resume', () => {
      if (!response.headersSent) response.flushHeaders();
    });
    // A client that left ends no reply of its own: end it, so that shutdown stops waiting for it.
    rows.once('close', () => {
      if (!response.writableEnded) response.end();
    });
    return new StreamableFile(rows, { type: `${NDJSON}; charset=utf-8` }).setErrorHandler(
      (error) => {
        this.logger.warn(`export cut short: ${error.message}`);
        response.destroy();
      },
    );
  }
}

export function toEnvelope<T>(page: Page<T>) {
  return {
    data: page.items,
    pagination: { current_page: page.page, limit: page.limit, page_count: page.pageCount },
  };
}

/** first/prev/next/last links keeping the request's other parameters; `next` may be a cursor. */
export function linkHeader(originalUrl: string, page: Page<unknown>): string {
  // At the first `?` only: the query may hold more (`q=zed?`), which split('?', 2) would drop.
  const queryAt = originalUrl.indexOf('?');
  const path = queryAt < 0 ? originalUrl : originalUrl.slice(0, queryAt);
  const search = queryAt < 0 ? '' : originalUrl.slice(queryAt + 1);
  const pageCount = page.pageCount;
  const params = new URLSearchParams(search);
  params.delete('cursor');
  const target = (rel: string, number?: number, cursor?: string) => {
    const linked = new URLSearchParams(params);
    if (cursor === undefined) linked.set('page', String(number));
    else {
      linked.delete('page');
      linked.set('cursor', cursor);
    }
    return `<${path}?${linked.toString()}>; rel="${rel}"`;
  };
  const links: string[] = [];
  if (pageCount > 0) links.push(target('first', 1));
  if (page.page > 1 && pageCount > 0)
    links.push(target('prev', Math.min(page.page - 1, pageCount)));
  // Only where the walk goes on: a cached total that is stale must not lead past its last row.
  if (page.nextCursor !== undefined) links.push(target('next', undefined, page.nextCursor));
  if (pageCount > 0) links.push(target('last', pageCount));
  return links.join(', ');
}
