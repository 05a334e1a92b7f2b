import { DynamicModule, Module } from '@nestjs/common';
import { LoggerModule } from 'nestjs-pino';
import pino, { type DestinationStream } from 'pino';
import type { AppConfig } from '../config/app-config';
import { accessLog } from './access-log';
import { buildLoggerOptions } from './logger-options';

/** The access-log middleware; `configureApp` mounts it ahead of every middleware that may answer. */
export const ACCESS_LOG = Symbol('ACCESS_LOG');

/**
 * Structured logging with pino: nestjs-pino makes it Nest's logger (`Logger` from 'nestjs-pino'),
 * and pino-http (`accessLog`) writes the line per request. Nest mounts module middleware only at
 * `init()`, after `configureApp`'s, which may answer first (405, 406, 429); so the access log is
 * mounted by `configureApp` as plain Express middleware, and nestjs-pino's own is off.
 *
 * `destination` replaces stdout (the test kit reads the real lines back from it).
 */
@Module({})
export class LoggingModule {
  static forRoot(config: AppConfig, destination?: DestinationStream): DynamicModule {
    const options = buildLoggerOptions(config, destination !== undefined);
    const logger = destination ? pino(options, destination) : pino(options);
    return {
      module: LoggingModule,
      global: true,
      imports: [LoggerModule.forRoot({ pinoHttp: { logger }, useExisting: true, forRoutes: [] })],
      providers: [{ provide: ACCESS_LOG, useValue: accessLog(logger) }],
      exports: [ACCESS_LOG],
    };
  }
}
