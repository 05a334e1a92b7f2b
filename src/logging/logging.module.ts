import { DynamicModule, Module } from '@nestjs/common';
import { LoggerModule } from 'nestjs-pino';
import pino, { type DestinationStream } from 'pino';
import type { AppConfig } from '../config/app-config';
import { accessLogMiddleware } from './access-log.middleware';
import { buildLoggerOptions } from './logger-options';

/** The access-log middleware; `configureApp` mounts it ahead of every middleware that may answer. */
export const ACCESS_LOG = Symbol('ACCESS_LOG');

/**
 * Structured logging with pino: nestjs-pino makes it Nest's logger (`Logger` from 'nestjs-pino'),
 * and `accessLogMiddleware` writes the line per request. The access log is mounted by
 * `configureApp` as plain Express middleware, ahead of the request-level middleware that may
 * answer on its own (405, 406).
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
      imports: [
        // No per-request middleware of its own (`forRoutes: []`): see the README, Logs.
        LoggerModule.forRoot({ pinoHttp: { logger }, useExisting: true, forRoutes: [] }),
      ],
      providers: [{ provide: ACCESS_LOG, useValue: accessLogMiddleware(logger) }],
      exports: [ACCESS_LOG],
    };
  }
}
