import { EventEmitter } from 'node:events';
import type { Request, Response } from 'express';
import { abandonedRequestsMiddleware, untilAbandoned } from './abandoned-requests';

describe('untilAbandoned', () => {
  it('leaves no failure unhandled when the request had stopped before the wait', async () => {
    const response = Object.assign(new EventEmitter(), { writableFinished: false });
    const unhandled = jest.fn();
    process.on('unhandledRejection', unhandled);
    try {
      await new Promise<void>((done) => {
        abandonedRequestsMiddleware({} as Request, response as unknown as Response, () => {
          response.emit('close'); // the client left
          const work = new Promise((_, reject) => setTimeout(() => reject(new Error('late')), 10));
          untilAbandoned(work).catch(() => undefined);
          setTimeout(done, 100);
        });
      });
      expect(unhandled).not.toHaveBeenCalled();
    } finally {
      process.off('unhandledRejection', unhandled);
    }
  });
});
