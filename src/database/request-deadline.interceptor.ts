import { CallHandler, HttpStatus, Inject, Injectable, NestInterceptor } from '@nestjs/common';
import { mergeMap, Observable, race, throwError, timer } from 'rxjs';
import { APP_CONFIG, type AppConfig } from '../config/app-config';
import { DATABASE_UNAVAILABLE } from '../common/problem-details/database-errors';
import { ProblemException } from '../common/problem-details/problem.exception';
import { currentRequest } from './abandoned-requests';

/**
 * Stops a request's database work once DB_STATEMENT_TIMEOUT_MS has passed since it arrived, as
 * when its client leaves, and answers 503 then, not once the work has unwound (a KILL, a dropped
 * connection). An export is bounded up to its first rows.
 */
@Injectable()
export class RequestDeadlineInterceptor implements NestInterceptor {
  private readonly limitMs: number;

  constructor(@Inject(APP_CONFIG) config: AppConfig) {
    this.limitMs = config.database.statementTimeoutMs;
  }

  intercept(_context: unknown, next: CallHandler): Observable<unknown> {
    const request = currentRequest();
    if (this.limitMs <= 0 || !request) return next.handle();
    const left = Math.max(0, request.arrivedAt + this.limitMs - Date.now());
    const deadline = timer(left).pipe(
      mergeMap(() => {
        const error = new RequestDeadlineError();
        request.stop(error);
        return throwError(() => error);
      }),
    );
    return race(next.handle(), deadline);
  }
}

/** A request stopped at its time limit: answered as a statement past the limit is. */
export class RequestDeadlineError extends ProblemException {
  constructor() {
    super(HttpStatus.SERVICE_UNAVAILABLE, DATABASE_UNAVAILABLE.detail, {
      headers: { 'Retry-After': DATABASE_UNAVAILABLE.retryAfterSeconds },
    });
  }
}
