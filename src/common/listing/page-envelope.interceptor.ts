import { createHash } from 'node:crypto';
import { CallHandler, ExecutionContext, Injectable, NestInterceptor } from '@nestjs/common';
import type { Request, Response } from 'express';
import { map, Observable } from 'rxjs';
import { Page } from './page';

export interface PageEnvelope<T> {
  data: T[];
  pagination: { current_page: number; limit: number; page_count: number };
}

/**
 * Renders a `Page` returned by a controller as the `{data, pagination}` envelope (as the UTF-8
 * bytes of its JSON, which Express sends as they are) and adds the listing headers:
 * X-Total-Count, an RFC 8288 Link header, the caching policy and the ETag.
 *
 * Conditional GET: this is the one place list replies get their ETag (Express's own body ETag is
 * switched off in `configureApp`). Express then answers `If-None-Match` itself when it sends the
 * reply (`req.fresh`: a matching tag, `W/` or not, in a list or `*` → 304 without a body).
 */
@Injectable()
export class PageEnvelopeInterceptor implements NestInterceptor {
  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    return next.handle().pipe(
      map((result: unknown) => {
        if (!(result instanceof Page)) return result;
        const http = context.switchToHttp();
        const request = http.getRequest<Request>();
        const response = http.getResponse<Response>();
        response.setHeader('X-Total-Count', String(result.total));
        const link = linkHeader(request.originalUrl, result);
        if (link) response.setHeader('Link', link);
        // Caches may keep it (per user) but must revalidate it each time: the ETag makes that cheap.
        response.setHeader('Cache-Control', 'private, no-cache');
        // The page depends on the token (its organization scope), not only on the URL.
        response.vary('Authorization');
        // Serialized here, once: the ETag hashes the very text that is sent.
        const body = JSON.stringify(toEnvelope(result));
        response.setHeader('ETag', entityTag(body, result.total));
        response.setHeader('Content-Type', 'application/json; charset=utf-8');
        return body;
      }),
    );
  }
}

export function toEnvelope<T>(page: Page<T>): PageEnvelope<T> {
  return {
    data: page.items,
    pagination: { current_page: page.page, limit: page.limit, page_count: page.pageCount },
  };
}

/** first/prev/next/last links that keep every other parameter of the request. */
export function linkHeader(originalUrl: string, page: Page<unknown>): string {
  const [path, search = ''] = originalUrl.split('?', 2);
  const pageCount = page.pageCount;
  const params = new URLSearchParams(search);
  const target = (number: number, rel: string) => {
    params.set('page', String(number));
    return `<${path}?${params.toString()}>; rel="${rel}"`;
  };
  const links: string[] = [];
  if (pageCount > 0) links.push(target(1, 'first'));
  if (page.page > 1 && pageCount > 0)
    links.push(target(Math.min(page.page - 1, pageCount), 'prev'));
  if (page.page < pageCount) links.push(target(page.page + 1, 'next'));
  if (pageCount > 0) links.push(target(pageCount, 'last'));
  return links.join(', ');
}

/**
 * A strong ETag: a hash of the exact JSON body sent and of the total, which X-Total-Count and Link
 * carry but the body does not (page_count alone can stay the same when rows come or go).
 */
export function entityTag(body: Buffer | string, total: number): string {
  // Two updates rather than one hash of `${body}\n${total}`: no concatenated copy of the body.
  return `"${createHash('sha256').update(body).update(`\n${total}`).digest('base64url').slice(0, 32)}"`;
}
