import { IncomingMessage } from 'node:http';
import { Socket } from 'node:net';
import {
  constructorWithPrototype,
  StablePrototypeExpressAdapter,
} from './stable-prototype-express-adapter';

describe('constructorWithPrototype', () => {
  it("builds instances of the base, through the base's own constructor, with the given prototype", () => {
    const prototype = Object.create(IncomingMessage.prototype, {
      marker: { value: 'express request' },
    }) as IncomingMessage & { marker: string };
    const Request = constructorWithPrototype(IncomingMessage, prototype)!;
    const socket = new Socket();
    const request = new Request(socket);
    expect(Object.getPrototypeOf(request)).toBe(prototype);
    expect(request).toBeInstanceOf(IncomingMessage);
    expect((request as typeof prototype).marker).toBe('express request');
    // Set by IncomingMessage's constructor.
    expect(request.socket).toBe(socket);
    expect(request.headers).toEqual({});
    socket.destroy();
  });

  it('gives up on a class, which cannot be called on an object it did not build', () => {
    class Base {
      readonly built = true;
    }
    expect(constructorWithPrototype(Base, Object.create(Base.prototype) as Base)).toBeUndefined();
  });
});

describe('StablePrototypeExpressAdapter.reply', () => {
  const fakeResponse = () => {
    const calls: [string, unknown][] = [];
    const response = {
      status: (code: number) => (calls.push(['status', code]), response),
      send: (body: unknown) => calls.push(['send', body]),
      json: (body: unknown) => calls.push(['json', body]),
      getHeader: () => undefined,
    };
    return { response, calls };
  };

  it("sends a body that is already bytes as it is, through Express's send", () => {
    const { response, calls } = fakeResponse();
    const bytes = Buffer.from('{"data":[]}');
    new StablePrototypeExpressAdapter().reply(response, bytes, 200);
    expect(calls).toEqual([
      ['status', 200],
      ['send', bytes],
    ]);
  });

  it('leaves any other body to Nest (objects as JSON)', () => {
    const { response, calls } = fakeResponse();
    new StablePrototypeExpressAdapter().reply(response, { data: [] });
    expect(calls).toEqual([['json', { data: [] }]]);
  });
});
