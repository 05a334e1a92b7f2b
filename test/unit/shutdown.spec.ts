import type { INestApplication } from '@nestjs/common';
import { createServer } from 'node:http';
import type { DataSource } from 'typeorm';
import { InFlightRequests } from '../../src/common/http/in-flight-requests';
import type { AppConfig } from '../../src/config/app-config';
import { DatabaseAvailability } from '../../src/database/database-availability';
import type { DemoDataBootstrap } from '../../src/database/demo-data.bootstrap';
import { drainAndClose } from '../../src/shutdown';

describe('drainAndClose', () => {
  it('exits with 1 when the app does not close within the bound, instead of waiting for ever', async () => {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const app = {
      getHttpServer: () => server,
      get: () => new InFlightRequests(),
      close: () => new Promise<void>(() => undefined), // a pool that never ends
    } as unknown as INestApplication;
    const started = Date.now();
    expect(await drainAndClose(app, 300, 'test')).toBe(1);
    expect(Date.now() - started).toBeLessThan(3000); // the close is given at least 2 s
  }, 5000);
});

describe('DatabaseAvailability at shutdown', () => {
  afterEach(() => jest.useRealTimers());

  it('leaves no timer behind once no connection attempt is running (a test run then exits at once)', async () => {
    jest.useFakeTimers();
    const availability = new DatabaseAvailability(
      {} as DataSource,
      {} as DemoDataBootstrap,
      {} as AppConfig,
    );
    await availability.beforeApplicationShutdown();
    expect(jest.getTimerCount()).toBe(0);
  });
});
