import { INestApplication, NestApplicationOptions, VersioningType } from '@nestjs/common';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { SwaggerModule } from '@nestjs/swagger';
import compression from 'compression';
import cors from 'cors';
import type { Express, NextFunction, Request, RequestHandler, Response } from 'express';
import { Logger } from 'nestjs-pino';
import { bearerPrecheck } from './auth/bearer-precheck';
import { TokenAuthenticator } from './auth/token-authenticator';
import { httpSemanticsMiddleware } from './common/http/http-semantics.middleware';
import { securityHeaders } from './common/http/security-headers';
import { InFlightRequests } from './common/http/in-flight-requests';
import { requestIdMiddleware } from './common/http/request-id.middleware';
import {
  applyServerLimits,
  requestBodyLimitMiddleware,
  requestHeaderFieldsMiddleware,
} from './common/http/request-limits';
import { collectGetRoutes } from './common/http/route-catalog';
import type { AppConfig } from './config/app-config';
import { rateLimitMiddleware } from './rate-limit/rate-limit.middleware';
import { parseQuery } from './common/validation/strict-query';
import { RateLimits } from './rate-limit/rate-limits';
import { DatabaseAvailability } from './database/database-availability';
import { ACCESS_LOG } from './logging/logging.module';
import { HttpMetrics } from './metrics/http-metrics';
import { buildOpenApiDocument } from './openapi/openapi-document';
import { swaggerUiFileCheck, swaggerUiInitScripts } from './openapi/swagger-ui-files';

/** Where Swagger UI and the OpenAPI document are served. */
const DOCS_PATH = 'docs';
const OPENAPI_PATH = 'openapi.json';

/**
 * How the Nest application is created, by `main.ts` and the test kit alike. No body parsers: no
 * route reads a body (`requestBodyLimitMiddleware` refuses any over 1 kB).
 */
export const APP_OPTIONS: NestApplicationOptions = { bufferLogs: true, bodyParser: false };

/** Replies smaller than this are sent as they are: compressing them saves less than it costs. */
export const COMPRESSION_THRESHOLD_BYTES = 1024;

/** The library's choice (by mime-db), plus NDJSON exports, which mime-db does not mark as text. */
const compressible: compression.CompressionFilter = (request, response) =>
  compression.filter(request, response) ||
  /^application\/x-ndjson\b/.test(String(response.getHeader('Content-Type') ?? ''));

/**
 * Everything about the HTTP app that is not a module: shared by `main.ts` and the test kit, so
 * that tests run exactly the app that ships. Call before `app.init()`.
 */
export function configureApp(app: INestApplication, config: AppConfig): void {
  const express = app as NestExpressApplication;
  express.useLogger(app.get(Logger));
  express.disable('x-powered-by');
  // List replies get their ETag from PageEnvelopeInterceptor, the one place that knows what a page
  // depends on; Express's automatic body ETag would also tag errors and could disagree with it.
  express.set('etag', false);
  if (config.trustProxy !== false) express.set('trust proxy', config.trustProxy);
  express.set('query parser', parseQuery);

  applyServerLimits(express.getHttpServer());

  const knownPaths = new Set<string>();
  express.use(
    // Counted from the very first middleware: shutdown waits for every request the app still runs.
    app.get(InFlightRequests).middleware,
    requestIdMiddleware,
    // First after the id, so that every reply is logged, also those middleware gives (405, 406).
    app.get<RequestHandler>(ACCESS_LOG),
    ...(config.metrics.enabled ? [app.get(HttpMetrics).middleware] : []),
    securityHeaders,
    // gzip or br as Accept-Encoding asks; streamed replies are flushed as they end.
    compression({ threshold: COMPRESSION_THRESHOLD_BYTES, filter: compressible }),
    requestHeaderFieldsMiddleware,
  );
  // Ahead of every other /v1 reply; an unknown token is looked up here only once counted.
  express.use('/v1', rateLimitMiddleware(app.get(RateLimits), app.get(TokenAuthenticator)));
  const corsHandler = config.corsOrigins.length
    ? cors({
        origin: config.corsOrigins,
        methods: ['GET', 'HEAD'],
        allowedHeaders: ['Authorization', 'If-None-Match', 'X-Request-Id'],
        exposedHeaders: [
          'X-Total-Count',
          'Link',
          'ETag',
          'X-Request-Id',
          'RateLimit',
          'RateLimit-Policy',
          'Retry-After',
        ],
        maxAge: 600,
      })
    : undefined;
  // Replies carry CORS headers; an OPTIONS is left to the HTTP semantics below, which hand only a
  // preflight of a path served to CORS (cors would answer 204 to any OPTIONS, on any path).
  if (corsHandler) {
    express.use((request: Request, response: Response, next: NextFunction) =>
      request.method === 'OPTIONS' ? next() : corsHandler(request, response, next),
    );
  }
  express.use(
    httpSemanticsMiddleware(knownPaths, swaggerUiFileCheck(DOCS_PATH), corsHandler),
    requestBodyLimitMiddleware,
  );
  app.enableVersioning({ type: VersioningType.URI });
  // Signals are handled by main.ts (src/shutdown.ts), which drains requests before closing.

  const document = buildOpenApiDocument(app, config.pagination);
  SwaggerModule.setup(DOCS_PATH, app, document, {
    jsonDocumentUrl: OPENAPI_PATH,
    raw: ['json'],
  });

  // Routes are known once the modules are resolved; the 405 check reads them from here.
  const routes = collectGetRoutes(app);
  for (const path of [
    ...routes.map((route) => route.path),
    `/${DOCS_PATH}`,
    `/${OPENAPI_PATH}`,
    ...swaggerUiInitScripts(DOCS_PATH),
  ]) {
    knownPaths.add(path.toLowerCase());
  }
  // A missing, malformed or known-unknown token is refused on the guarded routes ahead of Nest's
  // routes (registered at init, after these), with the guard's own 401.
  const precheck = bearerPrecheck(app.get(TokenAuthenticator), app.get(DatabaseAvailability));
  const server = express.getHttpAdapter().getInstance() as Express;
  for (const { path } of routes.filter((route) => !route.isPublic)) server.get(path, precheck);
}
