import { INestApplication, Logger } from '@nestjs/common';
import type { Server } from 'node:http';
import { InFlightRequests } from './common/http/in-flight-requests';

/** The least time the app is given to close, after the drain (its stops, its pools). */
const CLOSE_MS = 2000;
/** How long the requests cut at the deadline are given to end, and log, before the exit. */
const CUT_LOG_MS = 500;

/**
 * Graceful shutdown on SIGTERM/SIGINT: `drainAndClose`, then exit with its code.
 */
export function handleShutdownSignals(app: INestApplication, timeoutMs: number): void {
  let stopping = false;
  const shutDown = async (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    process.exit(await drainAndClose(app, timeoutMs, signal));
  };
  // Every signal is handled: Ctrl-C under `npm start` sends two (the terminal's, and npm's own),
  // and a second one unhandled would end the process before its requests had drained.
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    process.on(signal, (received) => void shutDown(received));
  }
}

/**
 * Stops accepting connections, lets in-flight requests finish (for at most `timeoutMs`), then
 * closes the app (module hooks, the database pool). Returns the exit code: 0, or 1 if requests
 * were still running at the deadline, so the orchestrator sees it.
 *
 * "In flight" includes requests whose client has already left: their connection is gone, so the
 * HTTP server's close does not wait for them, but their handler still runs and needs the pool.
 *
 * The HTTP server is closed first, by hand: Nest's own `app.close()` runs the modules' destroy
 * hooks before it closes the server, which could take a connection away from a running request.
 */
export async function drainAndClose(
  app: INestApplication,
  timeoutMs: number,
  reason = 'shutdown',
): Promise<0 | 1> {
  const logger = new Logger('Shutdown');
  const server = app.getHttpServer() as Server;
  const requests = app.get(InFlightRequests);
  const started = Date.now();
  logger.log(`${reason} received: draining in-flight requests (up to ${timeoutMs} ms)`);

  // Replies from now on close their connection, and idle keep-alive connections are closed as
  // they become idle, so that clients reconnect elsewhere instead of waiting on us.
  server.on('request', (_request, response) => response.setHeader('Connection', 'close'));
  const sweep = setInterval(() => server.closeIdleConnections(), 100);
  let deadline: NodeJS.Timeout | undefined;
  const drained = await Promise.race([
    (async () => {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
      });
      await requests.idle();
      return true;
    })(),
    new Promise<false>((resolve) => (deadline = setTimeout(() => resolve(false), timeoutMs))),
  ]);
  clearTimeout(deadline);
  clearInterval(sweep);
  if (!drained) {
    logger.error(`requests still running after ${timeoutMs} ms; exiting anyway`);
    server.closeAllConnections();
    // A moment for the cut replies' close events: each request's access-log line is written there.
    await Promise.race([
      requests.idle(),
      new Promise((resolve) => setTimeout(resolve, CUT_LOG_MS)),
    ]);
    return 1;
  }

  // Within what is left of the period (at least CLOSE_MS): a close that never ends (a pool
  // waiting on a connection) must not keep the process from exiting.
  const closeMs = Math.max(CLOSE_MS, timeoutMs - (Date.now() - started));
  let closeTimer: NodeJS.Timeout | undefined;
  try {
    const closed = await Promise.race([
      app.close().then(() => true),
      new Promise<false>((resolve) => (closeTimer = setTimeout(() => resolve(false), closeMs))),
    ]);
    if (!closed) {
      logger.error(`the app did not close within ${closeMs} ms; exiting anyway`);
      return 1;
    }
  } catch (error) {
    logger.error(`error while closing: ${String(error)}`);
    return 1;
  } finally {
    clearTimeout(closeTimer);
  }
  logger.log('stopped: requests drained, database pool closed');
  return 0;
}
