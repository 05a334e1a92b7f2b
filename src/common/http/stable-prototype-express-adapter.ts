import { createServer, IncomingMessage, ServerResponse } from 'node:http';
import type { NestApplicationOptions } from '@nestjs/common';
import { ExpressAdapter } from '@nestjs/platform-express';
import type { Express, Response } from 'express';

/**
 * Nest's Express adapter, with one change to the HTTP server it creates: requests and responses
 * are constructed with Express's own prototypes (`app.request`, `app.response`) from the start.
 *
 * Why: Express gives every request and response its prototype with `Object.setPrototypeOf` when
 * it starts handling them. On V8 (Node 20), an object whose prototype was changed gets a new hidden
 * class for every property added to it afterwards, shared with no other object: Express, Nest,
 * passport and this app add about twenty properties to each request (`next`, `params`, `route`,
 * `id`, `user`, …), so every request built some twenty hidden classes with their descriptor
 * arrays, and every property read on a request went through V8's megamorphic path. Born with the
 * right prototype, Express's `setPrototypeOf` finds nothing to change, and all requests share one
 * chain of hidden classes. Measured under 32 connections: 22 KiB less heap allocated per request
 * and a fifth to a quarter less CPU per request on the first pages of both listings (README,
 * Performance).
 *
 * How: the server's request and response classes are subclasses of Node's `IncomingMessage` and
 * `ServerResponse` whose prototypes inherit from Express's, and they become `app.request` and
 * `app.response` (Express reads them for every request). Subclasses, not plain functions that call
 * Node's constructors on `this`: V8 sizes a constructor's objects by the fields its body assigns,
 * and a wrapper function that assigns none got objects with no room for Node's: every response
 * went to dictionary mode while Node's constructor filled it (V8 gives up on fast properties after
 * a dozen out-of-object fields added by symbol, as Node adds its own), and requests kept most
 * fields out of the object. As subclasses, responses keep 42 fields in the object and requests 31
 * (`request-shapes.e2e-spec`).
 *
 * Nothing else changes: the objects are Node's own `IncomingMessage`/`ServerResponse`, built by
 * their own constructors, and they have Express's request and response methods as before.
 *
 * It also sends a reply body that is already bytes (a Buffer, as PageEnvelopeInterceptor renders
 * pages) with Express's `send`, which handles 304s and HEAD as for any body: Nest's adapter would
 * serialize a Buffer as a JSON object.
 */
export class StablePrototypeExpressAdapter extends ExpressAdapter {
  override initHttpServer(options: NestApplicationOptions): void {
    // HTTPS and forced connection closing are Nest's own business (this service uses neither).
    if (options.httpsOptions || options.forceCloseConnections) {
      super.initHttpServer(options);
      return;
    }
    const app = this.getInstance<Express>();
    const Request = inheriting(class extends IncomingMessage {}, app.request);
    const Response = inheriting(class extends ServerResponse {}, app.response);
    app.request = Request.prototype as Express['request'];
    app.response = Response.prototype as Express['response'];
    this.httpServer = createServer({ IncomingMessage: Request, ServerResponse: Response }, app);
  }

  override reply(response: unknown, body: unknown, statusCode?: number): unknown {
    if (!Buffer.isBuffer(body)) return super.reply(response, body, statusCode);
    const reply = response as Response;
    if (statusCode) reply.status(statusCode);
    return reply.send(body);
  }
}

/**
 * `subclass`, with its prototype now inheriting from `parent` (which itself inherits from the
 * prototype of `subclass`'s base): its instances are built by the base's constructor and have
 * `parent`'s methods.
 */
export function inheriting<C extends abstract new (...args: never[]) => object>(
  subclass: C,
  parent: object,
): C {
  Object.setPrototypeOf(subclass.prototype, parent);
  return subclass;
}
