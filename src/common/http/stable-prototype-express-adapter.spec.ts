import { IncomingMessage } from 'node:http';
import { Socket } from 'node:net';
import { inheriting, StablePrototypeExpressAdapter } from './stable-prototype-express-adapter';

describe('inheriting', () => {
  it("builds instances of the base, through the base's own constructor, with the parent's methods", () => {
    const parent = Object.create(IncomingMessage.prototype, {
      marker: { value: 'express request' },
    }) as IncomingMessage & { marker: string };
    const Request = inheriting(class extends IncomingMessage {}, parent);
    expect(Object.getPrototypeOf(Request.prototype)).toBe(parent);
    const socket = new Socket();
    const request = new Request(socket);
    expect(Object.getPrototypeOf(request)).toBe(Request.prototype);
    expect(request).toBeInstanceOf(IncomingMessage);
    expect((request as typeof parent).marker).toBe('express request');
    // Set by IncomingMessage's constructor.
    expect(request.socket).toBe(socket);
    expect(request.headers).toEqual({});
    socket.destroy();
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
