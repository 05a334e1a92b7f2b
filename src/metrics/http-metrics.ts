import { Injectable } from '@nestjs/common';
import type { NextFunction, Request, Response } from 'express';
import { Counter, Histogram } from 'prom-client';
import { routeTemplate } from '../logging/logger-options';
import { MetricsRegistry } from './metrics.registry';

/** Requests that no route served (404, 405 …) share one label value, so labels stay few. */
export const UNMATCHED_ROUTE = 'unmatched';

/**
 * Request count and latency by method, route template and status. The route label is the
 * template (`/v1/users`), never the URL: ids, query strings and tokens never become labels.
 */
@Injectable()
export class HttpMetrics {
  private readonly requests: Counter<'method' | 'route' | 'status'>;
  private readonly duration: Histogram<'method' | 'route' | 'status'>;

  constructor(registry: MetricsRegistry) {
    const labelNames = ['method', 'route', 'status'] as const;
    this.requests = new Counter({
      name: 'http_requests_total',
      help: 'HTTP requests answered, by method, route template and status.',
      labelNames,
      registers: [registry],
    });
    this.duration = new Histogram({
      name: 'http_request_duration_seconds',
      help: 'Time from the request to the end of its reply, by method, route template and status.',
      labelNames,
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers: [registry],
    });
  }

  /** Express middleware; mounted first so replies given by other middleware count too. */
  readonly middleware = (request: Request, response: Response, next: NextFunction): void => {
    const started = process.hrtime.bigint();
    // 'close' ends every response exactly once: just after 'finish' when the reply was sent, or
    // when the client left before that.
    response.on('close', () => {
      const labels = {
        method: request.method,
        route: routeTemplate(request) ?? UNMATCHED_ROUTE,
        status: String(response.statusCode),
      };
      this.requests.inc(labels);
      this.duration.observe(labels, Number(process.hrtime.bigint() - started) / 1e9);
    });
    next();
  };
}
