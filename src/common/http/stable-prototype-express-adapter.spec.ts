import { IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Socket } from 'node:net';
import type { Express } from 'express';
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
    expect(request).toBeInstanceOf(IncomingMessage);
    expect((request as typeof parent).marker).toBe('express request');
    // Set by IncomingMessage's constructor.
    expect(request.socket).toBe(socket);
    socket.destroy();
  });
});

describe('StablePrototypeExpressAdapter', () => {
  it("gives the server's requests and responses Express's methods before Express sees them", async () => {
    const adapter = new StablePrototypeExpressAdapter();
    adapter.initHttpServer({});
    const app = adapter.getInstance<Express>();
    const server = adapter.getHttpServer() as Server;
    const born: boolean[] = [];
    // Runs before Express's own handler, which would otherwise re-parent them itself.
    server.prependListener('request', (request, response) => {
      born.push(
        request instanceof IncomingMessage &&
          Object.getPrototypeOf(request) === app.request &&
          Object.getPrototypeOf(response) === app.response,
      );
    });
    app.get('/', (request, response) => {
      response.json({ path: request.path });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = server.address() as AddressInfo;
      const reply = await fetch(`http://127.0.0.1:${port}/?a=1`);
      expect(await reply.json()).toEqual({ path: '/' });
      expect(born).toEqual([true]);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
