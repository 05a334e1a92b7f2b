import type { IncomingMessage } from 'node:http';
import type { LoggerOptions } from 'pino';
import type { AppConfig } from '../config/app-config';

type RequestWithRoute = IncomingMessage & { route?: { path?: string } };

/**
 * The route template that served the request (`/v1/users`), never the raw URL. Nest middleware
 * bound to every path (`forRoutes('*')`, none today) shows up as a `{*path}` wildcard: that is no
 * route of ours, so requests nothing matched (404, 405) would carry no route.
 */
export function routeTemplate(request: IncomingMessage): string | undefined {
  const path = (request as RequestWithRoute).route?.path;
  return typeof path === 'string' && !path.includes('{*') ? path : undefined;
}

/**
 * pino-pretty, where it is installed: a dev dependency, which a production install (`npm ci
 * --omit=dev`, the image) lacks; there lines stay JSON rather than the boot failing.
 */
function prettyTransport(): LoggerOptions['transport'] {
  try {
    require.resolve('pino-pretty');
  } catch {
    return undefined;
  }
  return { target: 'pino-pretty', options: { singleLine: true } };
}

/**
 * The root logger's options. `withDestination`: pretty printing is a transport, which pino
 * cannot combine with a destination stream (the test kit's capture), so it is off then.
 */
export function buildLoggerOptions(config: AppConfig, withDestination = false): LoggerOptions {
  return {
    level: config.log.level,
    // A failed statement's values (e-mails, token hashes), also inlined in the driver's SQL text;
    // the statement with its placeholders (`err.query`) is kept.
    redact: { paths: ['err.parameters', 'err.sql', 'err.driverError.sql'], censor: '[values]' },
    transport: config.log.pretty && !withDestination ? prettyTransport() : undefined,
  };
}

const LOG_LEVELS = new Set(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']);

/**
 * The logger's options before the configuration is validated (a bad value is itself the first
 * line to write), read from the raw environment with the same defaults: JSON unless LOG_PRETTY
 * says otherwise or NODE_ENV is development (its default).
 */
export function buildBootLoggerOptions(env: NodeJS.ProcessEnv = process.env): LoggerOptions {
  const pretty = env.LOG_PRETTY
    ? env.LOG_PRETTY === 'true' || env.LOG_PRETTY === '1'
    : (env.NODE_ENV || 'development') === 'development';
  const level = env.LOG_LEVEL && LOG_LEVELS.has(env.LOG_LEVEL) ? env.LOG_LEVEL : 'info';
  return {
    level,
    transport: pretty ? prettyTransport() : undefined,
  };
}
