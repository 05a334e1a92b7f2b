import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { composeMiddleware } from './compose-middleware';

const request = {} as Request;
const response = {} as Response;

/** Runs the composed middleware and resolves with what it passed to the outer `next`. */
function run(...handlers: RequestHandler[]): Promise<unknown[]> {
  return new Promise((resolve) => {
    composeMiddleware(...handlers)(request, response, ((...args: unknown[]) =>
      resolve(args)) as NextFunction);
  });
}

describe('composeMiddleware', () => {
  it('runs every middleware in order, then the next layer once', async () => {
    const calls: string[] = [];
    const step =
      (name: string): RequestHandler =>
      (_request, _response, next) => {
        calls.push(name);
        next();
      };
    const outerNext = jest.fn();
    composeMiddleware(step('a'), step('b'), step('c'))(request, response, outerNext);
    expect(calls).toEqual(['a', 'b', 'c']);
    expect(outerNext).toHaveBeenCalledTimes(1);
    expect(outerNext).toHaveBeenCalledWith();
  });

  it('waits for a middleware that calls next later', async () => {
    const calls: string[] = [];
    const args = await run(
      (_request, _response, next) => {
        setTimeout(() => {
          calls.push('late');
          next();
        }, 5);
      },
      (_request, _response, next) => {
        calls.push('after');
        next();
      },
    );
    expect(calls).toEqual(['late', 'after']);
    expect(args).toEqual([]);
  });

  it('stops at a middleware that answers without calling next', () => {
    const later = jest.fn();
    const outerNext = jest.fn();
    composeMiddleware(() => undefined, later)(request, response, outerNext);
    expect(later).not.toHaveBeenCalled();
    expect(outerNext).not.toHaveBeenCalled();
  });

  it.each([
    ['passed to next', ((_request, _response, next) => next(new Error('boom'))) as RequestHandler],
    [
      'thrown',
      (() => {
        throw new Error('boom');
      }) as RequestHandler,
    ],
    ['rejected', (async () => Promise.reject(new Error('boom'))) as RequestHandler],
  ])('hands an error %s to Express and skips the rest', async (_how, failing) => {
    const later = jest.fn();
    const [error] = await run(failing, later);
    expect(error).toEqual(new Error('boom'));
    expect(later).not.toHaveBeenCalled();
  });
});
