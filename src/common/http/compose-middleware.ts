import type { NextFunction, Request, RequestHandler, Response } from 'express';

/**
 * Runs Express middleware one after the other as a single router layer, in order, as
 * `app.use(a, b, c)` would, but without the router's per-layer work (path matching, parameter
 * processing, its own `next` closure) for each of them: the cross-cutting middleware runs on every
 * request. An error passed to `next`, thrown, or rejected by an async middleware skips the rest
 * and goes to Express's error handling.
 */
export function composeMiddleware(...handlers: RequestHandler[]): RequestHandler {
  return (request: Request, response: Response, next: NextFunction): void => {
    let index = 0;
    const step = (error?: unknown): void => {
      if (error !== undefined && error !== null) return next(error);
      const handler = handlers[index++];
      if (!handler) return next();
      try {
        const result: unknown = handler(request, response, step);
        if (result instanceof Promise) result.catch(step);
      } catch (thrown) {
        step(thrown ?? new Error('middleware threw nothing'));
      }
    };
    step();
  };
}
