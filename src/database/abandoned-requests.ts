import { AsyncLocalStorage } from 'node:async_hooks';
import { HttpStatus } from '@nestjs/common';
import type { NextFunction, Request, Response } from 'express';
import { ProblemException } from '../common/problem-details/problem.exception';

/** The request being served: its signal, how to stop its work, and when it arrived. */
interface RequestContext {
  signal: AbortSignal;
  stop?: (reason: Error) => void;
  arrivedAt?: number;
}

const requestSignals = new AsyncLocalStorage<RequestContext>();

/**
 * Gives each request an AbortSignal that fires when its client leaves before the reply is
 * finished, reachable from the database layer (`currentRequestSignal`) without threading it
 * through every call.
 */
export function abandonedRequestsMiddleware(
  _request: Request,
  response: Response,
  next: NextFunction,
): void {
  const controller = new AbortController();
  response.once('close', () => {
    if (!response.writableFinished) controller.abort(new AbandonedRequestError());
  });
  const stop = (reason: Error) => controller.abort(reason);
  requestSignals.run({ signal: controller.signal, stop, arrivedAt: Date.now() }, next);
}

/** The signal of the request being served, if any (none in a CLI or outside a request). */
export function currentRequestSignal(): AbortSignal | undefined {
  return requestSignals.getStore()?.signal;
}

/** The request being served (not work shared between requests), if any. */
export function currentRequest(): Required<RequestContext> | undefined {
  const request = requestSignals.getStore();
  return request?.stop && request.arrivedAt !== undefined
    ? (request as Required<RequestContext>)
    : undefined;
}

/**
 * Runs `work` detached from the current request, so that the request's client leaving does not
 * stop it: for work that other requests share or that outlives the request.
 */
export function detachedFromRequest<T>(work: () => T): T {
  return requestSignals.exit(work);
}

/**
 * Work several requests wait for (a shared count): it runs under a signal of its own that fires
 * only once every request that joined it has left, so it is stopped when nobody waits for it any
 * more, and not when the one that happened to start it leaves. Background work that no request
 * waits for (`background`) is never stopped that way.
 */
export class SharedWork {
  private readonly controller = new AbortController();
  private waiting = 0;

  constructor(private readonly background = false) {}

  /** The current request waits for this work too. */
  join(): void {
    const signal = currentRequestSignal();
    if (this.background || !signal) {
      this.waiting = Number.POSITIVE_INFINITY; // someone who cannot leave waits for it
      return;
    }
    this.waiting++;
    const leave = () => {
      if (--this.waiting === 0) this.controller.abort(signal.reason);
    };
    if (signal.aborted) leave();
    else signal.addEventListener('abort', leave, { once: true });
  }

  /** Every request that joined it has left: it is being stopped. */
  get stopped(): boolean {
    return this.controller.signal.aborted;
  }

  run<T>(work: () => T): T {
    return this.background
      ? detachedFromRequest(work)
      : requestSignals.run({ signal: this.controller.signal }, work);
  }
}

/**
 * The request's client has left: its statements are stopped and no later one starts. A request
 * that shared the work of one that was abandoned gets this too, as a 503 worth retrying at once.
 */
export class AbandonedRequestError extends ProblemException {
  constructor() {
    super(HttpStatus.SERVICE_UNAVAILABLE, 'The request was abandoned by its client; retry it.', {
      headers: { 'Retry-After': '1' },
    });
  }
}

/** Throws the request's abandonment if its client has already left. */
export function stopIfAbandoned(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw signal.reason;
}

/** `work`, or the request's abandonment (or deadline) if that comes first: a wait it stops. */
export function untilAbandoned<T>(work: Promise<T>): Promise<T> {
  const signal = currentRequestSignal();
  if (!signal) return work;
  if (signal.aborted) {
    work.catch(() => undefined); // no one waits for it: its failure is not unhandled
    return Promise.reject(signal.reason as Error);
  }
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason as Error);
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}
