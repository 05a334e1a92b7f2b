import { DynamicModule, Module } from '@nestjs/common';
import { LoggerModule } from 'nestjs-pino';
import type { DestinationStream } from 'pino';
import { HttpLogger, pinoHttp } from 'pino-http';
import type { AppConfig } from '../config/app-config';
import { buildHttpLoggerOptions } from './logger-options';

/** The pino-http middleware; `configureApp` mounts it ahead of every middleware that may answer. */
export const HTTP_LOGGER = Symbol('HTTP_LOGGER');

/**
 * Structured logging with nestjs-pino. The request logger is mounted by `configureApp` as plain
 * Express middleware, ahead of the request-level middleware that may answer on its own (405,
 * 406): nestjs-pino's own middleware would be registered after those and miss their replies.
 * nestjs-pino then only binds each request's logger (`useExisting`), so service logs written
 * during a request carry its id.
 *
 * `destination` replaces stdout (the test kit reads the real lines back from it).
 */
@Module({})
export class LoggingModule {
  static forRoot(config: AppConfig, destination?: DestinationStream): DynamicModule {
    const options = buildHttpLoggerOptions(config, destination !== undefined);
    const httpLogger: HttpLogger = destination ? pinoHttp(options, destination) : pinoHttp(options);
    return {
      module: LoggingModule,
      global: true,
      imports: [
        LoggerModule.forRoot({ pinoHttp: { logger: httpLogger.logger }, useExisting: true }),
      ],
      providers: [{ provide: HTTP_LOGGER, useValue: httpLogger }],
      exports: [HTTP_LOGGER],
    };
  }
}
