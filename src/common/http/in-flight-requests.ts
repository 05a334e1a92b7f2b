import { Injectable } from '@nestjs/common';
import type { NextFunction, Request, Response } from 'express';

/**
 * The requests the app is still working on, counted from the first middleware until the app ends
 * the reply. That includes requests whose client has already gone: the connection is closed, so
 * the HTTP server no longer waits for them, but their handler still runs and still needs the
 * database pool. Shutdown waits for this count to reach zero before it closes the pool.
 */
@Injectable()
export class InFlightRequests {
  private running = 0;
  private waiters: (() => void)[] = [];

  readonly middleware = (_request: Request, response: Response, next: NextFunction): void => {
    this.running++;
    // `end` is the one call every reply makes, also to a client that has left ('finish' is then
    // never emitted, and 'close' comes as the client leaves, before the handler is done).
    const end = response.end;
    let counted = true;
    response.end = ((...args: Parameters<Response['end']>) => {
      if (counted) {
        counted = false;
        this.finished();
      }
      return end.apply(response, args);
    }) as Response['end'];
    next();
  };

  /** Counts work a request left running past its reply (stopped at its deadline) until released. */
  hold(): () => void {
    this.running++;
    let held = true;
    return () => {
      if (held) {
        held = false;
        this.finished();
      }
    };
  }

  /** Resolves once no request is running. */
  idle(): Promise<void> {
    if (this.running === 0) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  private finished(): void {
    this.running--;
    if (this.running > 0) return;
    const waiters = this.waiters;
    this.waiters = [];
    for (const resolve of waiters) resolve();
  }
}
