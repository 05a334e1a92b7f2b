import 'reflect-metadata';
import type { AddressInfo } from 'node:net';
import { Logger } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import pino from 'pino';
import { AppModule } from './app.module';
import { APP_OPTIONS, configureApp } from './app.setup';
import { registeredScopeNames } from './common/auth/scope-registry';
import { AppConfig, ConfigError, loadConfig } from './config/app-config';
import { BootLogger } from './logging/boot-logger';
import { buildBootLoggerOptions, buildLoggerOptions } from './logging/logger-options';
import { handleShutdownSignals } from './shutdown';

// Every line is pino's from the first one on (JSON outside development), boot failures included.
let bootLogger = new BootLogger(pino(buildBootLoggerOptions()));

/** Writes a fatal line, then exits 1 once it is written (pretty output goes through a worker). */
function die(message: string, error?: unknown): void {
  // Even with LOG_LEVEL=silent: a boot that ends says why.
  if (!bootLogger.pino.isLevelEnabled('fatal')) bootLogger.pino.level = 'fatal';
  bootLogger.pino.fatal({ context: 'Bootstrap', err: error }, message);
  process.exitCode = 1;
  bootLogger.pino.flush(() => process.exit(1));
  setTimeout(() => process.exit(1), 1000).unref();
}

process.on('uncaughtException', (error) => die('uncaught exception', error));

async function bootstrap(): Promise<void> {
  let config: AppConfig;
  try {
    config = loadConfig();
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    return die(error.message);
  }
  bootLogger = new BootLogger(pino(buildLoggerOptions(config)));
  const app = await NestFactory.create<NestExpressApplication>(
    AppModule.forRoot(config),
    // Our logger until configureApp hands over to the app's, and failures thrown to us, not exit(1).
    { ...APP_OPTIONS, logger: bootLogger, abortOnError: false },
  );
  configureApp(app, config);
  // Initialised first (database, migrations, seed), so that only the listen itself is caught below.
  await app.init();
  try {
    await app.listen(config.port, config.host);
  } catch (error) {
    // A host that does not resolve or is not this machine's, a port taken or not allowed.
    const { code, syscall, message } = error as NodeJS.ErrnoException;
    if (syscall !== 'listen' && syscall !== 'getaddrinfo') throw error;
    const [variable, value] = /EADDRINUSE|EACCES/.test(code ?? '')
      ? ['PORT', config.port]
      : ['HOST', config.host];
    return die(`${variable}=${JSON.stringify(value)}: cannot listen there (${message})`);
  }
  handleShutdownSignals(app, config.shutdownTimeoutMs);

  const database =
    config.database.kind === 'sqlite'
      ? `embedded SQLite at ${config.database.sqlitePath}`
      : 'MySQL';
  const logger = new Logger('Bootstrap');
  // The port bound, not the one asked for: PORT=0 lets the system choose.
  const { port } = app.getHttpServer().address() as AddressInfo;
  logger.log(`listening on port ${port}, database: ${database}`);
  // bin/start-prod applies NODE_HEAP_MAX_MB as a node flag; started otherwise, V8's default holds.
  if (
    config.env === 'production' &&
    !process.execArgv.includes(`--max-old-space-size=${config.heapMaxMb}`)
  ) {
    logger.warn(
      `NODE_HEAP_MAX_MB=${config.heapMaxMb} is not applied: start the app with bin/start-prod (npm run start:prod)`,
    );
  }
  const scopes = registeredScopeNames().join(',');
  logger.log(`create a token with: npm run token -- create --name me --scopes ${scopes}`);
}

bootstrap().catch((error: unknown) => {
  // Lines Nest buffered before the failure go out first, through the same logger.
  Logger.flush();
  // Migrations not run, or a file that cannot be the database, are the operator's to put right,
  // not a fault: the message says what, no stack.
  const { code, message } = error as { code?: unknown; message?: string };
  if (code === 'migrations_pending' || code === 'sqlite_unusable') {
    return die(`boot failed: ${message}`);
  }
  die('boot failed', error);
});
