import { INestApplication, Logger } from '@nestjs/common';
import type { Server } from 'node:http';

/**
 * Graceful shutdown on SIGTERM/SIGINT: stop accepting connections, let in-flight requests finish
 * (for at most `timeoutMs`), then close the app (module hooks, the database pool) and exit 0.
 * If requests are still running at the deadline, exit 1 so the orchestrator sees it.
 *
 * The HTTP server is closed first, by hand: Nest's own `app.close()` runs the modules' destroy
 * hooks before it closes the server, which could take a connection away from a running request.
 */
export function handleShutdownSignals(app: INestApplication, timeoutMs: number): void {
  const logger = new Logger('Shutdown');
  let stopping = false;

  const shutDown = async (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    const server = app.getHttpServer() as Server;
    logger.log(`${signal} received: draining in-flight requests (up to ${timeoutMs} ms)`);

    const deadline = setTimeout(() => {
      logger.error(`requests still running after ${timeoutMs} ms; exiting anyway`);
      server.closeAllConnections();
      process.exit(1);
    }, timeoutMs);

    // Replies from now on close their connection, and idle keep-alive connections are closed
    // as they become idle, so that clients reconnect elsewhere instead of waiting on us.
    server.on('request', (_request, response) => response.setHeader('Connection', 'close'));
    const sweep = setInterval(() => server.closeIdleConnections(), 100);
    await new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeIdleConnections();
    });
    clearInterval(sweep);

    try {
      await app.close();
    } catch (error) {
      logger.error(`error while closing: ${String(error)}`);
      process.exit(1);
    }
    clearTimeout(deadline);
    logger.log('stopped: requests drained, database pool closed');
    process.exit(0);
  };

  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    process.once(signal, (received) => void shutDown(received));
  }
}
