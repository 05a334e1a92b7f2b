import {
  CallHandler,
  ExecutionContext,
  HttpStatus,
  Inject,
  Injectable,
  NestInterceptor,
  SetMetadata,
} from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { Observable } from 'rxjs';
import { APP_CONFIG, type AppConfig } from '../config/app-config';
import { InFlightRequests } from '../common/http/in-flight-requests';
import { DATABASE_UNAVAILABLE } from '../common/problem-details/database-errors';
import { ProblemException } from '../common/problem-details/problem.exception';
import { currentRequest } from './abandoned-requests';

const OWN_TIME_LIMIT = 'ownTimeLimit';

/** A route that bounds its database work itself (readiness) and answers on its own. */
export const OwnTimeLimit = () => SetMetadata(OWN_TIME_LIMIT, true);

/**
 * Stops a request's database work once DB_STATEMENT_TIMEOUT_MS has passed since it arrived, as
 * when its client leaves, and answers 503 then, not once the work has unwound (a KILL, a dropped
 * connection); shutdown still waits for that work. An export is bounded up to its first rows.
 */
@Injectable()
export class RequestDeadlineInterceptor implements NestInterceptor {
  private readonly limitMs: number;

  constructor(
    @Inject(APP_CONFIG) config: AppConfig,
    private readonly reflector: Reflector,
    private readonly inFlight: InFlightRequests,
  ) {
    this.limitMs = config.database.statementTimeoutMs;
  }

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const request = currentRequest();
    const own = this.reflector.getAllAndOverride<boolean>(OWN_TIME_LIMIT, [
      context.getHandler(),
      context.getClass(),
    ]);
    if (this.limitMs <= 0 || !request || own) return next.handle();
    const left = Math.max(0, request.arrivedAt + this.limitMs - Date.now());
    return new Observable((subscriber) => {
      let release: (() => void) | undefined;
      const timer = setTimeout(() => {
        // The handler goes on until its work has stopped, answering no one.
        release = this.inFlight.hold();
        const error = new RequestDeadlineError();
        request.stop(error);
        subscriber.error(error);
      }, left);
      const work = next.handle().subscribe({
        next: (value) => {
          clearTimeout(timer);
          subscriber.next(value);
        },
        error: (error: unknown) => subscriber.error(error),
        complete: () => subscriber.complete(),
      });
      work.add(() => release?.());
      return () => {
        clearTimeout(timer);
        if (!release) work.unsubscribe();
      };
    });
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
