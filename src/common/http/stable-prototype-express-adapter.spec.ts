import { IncomingMessage } from 'node:http';
import { Socket } from 'node:net';
import { constructorWithPrototype } from './stable-prototype-express-adapter';

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
