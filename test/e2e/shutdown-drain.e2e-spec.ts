import { Controller, Get, Injectable, Module } from '@nestjs/common';
import { request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { DataSource } from 'typeorm';
import { Public } from '../../src/common/auth/auth.decorators';
import { InFlightRequests } from '../../src/common/http/in-flight-requests';
import { drainAndClose } from '../../src/shutdown';
import { eventually, startTestApp, TestApp } from '../kit';

/** A promise with its resolve function outside. */
function deferred<T = void>() {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

/**
 * A route that tells the test when its handler has started, waits for the test to let it go on,
 * then queries the database and reports how that went: a handler the test can hold in flight.
 */
@Injectable()
class Gate {
  entered = deferred();
  release = deferred();
  outcome = deferred<string>();
}

@Controller({ path: 'gated', version: '1' })
class GatedController {
  constructor(
    private readonly gate: Gate,
    private readonly dataSource: DataSource,
  ) {}

  @Get()
  @Public()
  async run(): Promise<{ ok: boolean }> {
    this.gate.entered.resolve();
    await this.gate.release.promise;
    try {
      await this.dataSource.query('SELECT 1 AS one');
      this.gate.outcome.resolve('query ran');
    } catch (error) {
      this.gate.outcome.resolve(`query failed: ${String(error)}`);
    }
    return { ok: true };
  }
}

@Module({ controllers: [GatedController], providers: [Gate] })
class GatedModule {}

/**
 * Shutdown waits for handlers whose client has already gone. Their connection is closed, so the
 * HTTP server's own close does not wait for them; closing the pool then would fail their queries.
 */
describe('shutdown drains abandoned requests', () => {
  let kit: TestApp;

  beforeAll(async () => {
    kit = await startTestApp({ imports: [GatedModule] });
  });

  afterAll(() => kit.database.drop());

  it('keeps the pool open until a handler whose client left is done, then closes and returns 0', async () => {
    await kit.app.listen(0, '127.0.0.1');
    const { port } = kit.app.getHttpServer().address() as AddressInfo;
    const gate = kit.app.get(Gate);
    const requests = kit.app.get(InFlightRequests);

    // The client asks, then leaves while the handler waits.
    const client = httpRequest({ host: '127.0.0.1', port, path: '/v1/gated' });
    client.on('error', () => undefined);
    client.end();
    await gate.entered.promise;
    client.destroy();
    const open = await eventually(
      () => connections(kit),
      (count) => count === 0,
      5_000,
    );
    expect(open).toBe(0);
    // The app still counts the abandoned request: it is not idle.
    let idle = false;
    void requests.idle().then(() => (idle = true));
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(idle).toBe(false);

    let settled: number | undefined;
    const closing = drainAndClose(kit.app, 10_000, 'test').then((code) => (settled = code));
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(settled).toBeUndefined(); // still waiting for the handler, pool open

    gate.release.resolve();
    expect(await gate.outcome.promise).toBe('query ran');
    expect(await closing).toBe(0);
    expect(idle).toBe(true);
    expect(kit.dataSource.isInitialized).toBe(false); // the pool was closed after all
  });
});

function connections(kit: TestApp): Promise<number> {
  const server = kit.app.getHttpServer() as import('node:http').Server;
  return new Promise((resolve, reject) =>
    server.getConnections((error, count) => (error ? reject(error) : resolve(count))),
  );
}
