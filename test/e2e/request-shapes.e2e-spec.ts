import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { setFlagsFromString } from 'node:v8';
import type { Express } from 'express';
import { startTestApp, TestApp } from '../kit';

/**
 * Requests and responses are built with Express's prototypes from the start
 * (`StablePrototypeExpressAdapter`): an object whose prototype Express changes afterwards gets a
 * hidden class of its own for every property added to it, on every request.
 */
describe('request objects (StablePrototypeExpressAdapter)', () => {
  let kit: TestApp;
  let token: string;
  let server: Server;
  const arrived: {
    request: IncomingMessage;
    response: ServerResponse;
    prototypes: object[];
    /** Settles once the server is done with the exchange (listeners on 'finish' have run). */
    closed: Promise<void>;
  }[] = [];
  const record = (request: IncomingMessage, response: ServerResponse) =>
    arrived.push({
      request,
      response,
      prototypes: [Object.getPrototypeOf(request), Object.getPrototypeOf(response)],
      closed: new Promise((resolve) => response.once('close', () => setImmediate(resolve))),
    });

  beforeAll(async () => {
    kit = await startTestApp();
    token = await kit.token();
    server = kit.app.getHttpServer();
    server.prependListener('request', record);
  });
  afterAll(async () => {
    server?.off('request', record);
    await kit?.close();
  });
  beforeEach(() => (arrived.length = 0));

  it("arrive with Express's request and response prototypes, before Express handles them", async () => {
    const express = kit.app.getHttpAdapter().getInstance() as Express;
    await kit.http().get('/v1/users').set('Authorization', `Bearer ${token}`).expect(200);
    expect(arrived).toHaveLength(1);
    expect(arrived[0].prototypes[0]).toBe(express.request);
    expect(arrived[0].prototypes[1]).toBe(express.response);
  });

  it('share one hidden class between requests of a route once handled, with fast properties (V8)', async () => {
    setFlagsFromString('--allow-natives-syntax');
    // Compiled after the flag is set, so V8 accepts its intrinsics.
    // An object whose hidden class V8 deprecated since (a field's type generalized, say when some
    // request of another test held a value of another kind there) moves to the current one first.
    const haveSameMap = new Function(
      'a',
      'b',
      '%TryMigrateInstance(a); %TryMigrateInstance(b); return %HaveSameMap(a, b)',
    ) as (a: object, b: object) => boolean;
    // Dictionary mode: V8 keeps the object's properties in a hash table, and a hidden class of a
    // dictionary-mode object says nothing about its fields (two of them may even share one).
    const hasFastProperties = new Function('a', 'return %HasFastProperties(a)') as (
      a: object,
    ) => boolean;
    // The first requests may still generalize field representations; the later ones are stable.
    for (let i = 0; i < 6; i++) {
      await kit.http().get('/v1/users').set('Authorization', `Bearer ${token}`).expect(200);
    }
    await Promise.all(arrived.map((exchange) => exchange.closed));
    const modes = arrived.map(
      ({ request, response }) =>
        `${hasFastProperties(request) ? 'fast' : 'dictionary'}/${hasFastProperties(response) ? 'fast' : 'dictionary'}`,
    );
    expect(modes).toEqual(arrived.map(() => 'fast/fast'));
    const [previous, last] = arrived.slice(-2);
    expect(haveSameMap(previous.request, last.request)).toBe(true);
    expect(haveSameMap(previous.response, last.response)).toBe(true);
  });
});
