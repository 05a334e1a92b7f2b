import { INestApplication, VersioningType } from '@nestjs/common';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { DocumentBuilder, OpenAPIObject, SwaggerModule } from '@nestjs/swagger';
import helmet from 'helmet';
import { Logger } from 'nestjs-pino';
import type { HttpLogger } from 'pino-http';
import { httpSemanticsMiddleware } from './common/http/http-semantics.middleware';
import { requestIdMiddleware } from './common/http/request-id.middleware';
import { collectGetRoutePaths } from './common/http/route-catalog';
import { configurePagination } from './common/listing/listing-query.dto';
import type { AppConfig } from './config/app-config';
import { HTTP_LOGGER } from './logging/logging.module';
import { HttpMetrics } from './metrics/http-metrics';

/**
 * Everything about the HTTP app that is not a module: shared by `main.ts` and the test kit, so
 * that tests run exactly the app that ships. Call before `app.init()`.
 */
export function configureApp(app: INestApplication, config: AppConfig): void {
  const express = app as NestExpressApplication;
  configurePagination(config.pagination);
  express.useLogger(app.get(Logger));
  express.disable('x-powered-by');
  if (config.trustProxy) express.set('trust proxy', true);

  const knownPaths = new Set<string>();
  express.use(requestIdMiddleware);
  // First after the id, so that every reply is logged, also those middleware gives (405, 406).
  express.use(app.get<HttpLogger>(HTTP_LOGGER));
  if (config.metrics.enabled) express.use(app.get(HttpMetrics).middleware);
  express.use(helmet({ contentSecurityPolicy: false, crossOriginEmbedderPolicy: false }));
  express.use(httpSemanticsMiddleware(knownPaths));
  if (config.corsOrigins.length) {
    express.enableCors({ origin: config.corsOrigins, methods: ['GET', 'HEAD'], maxAge: 600 });
  }
  app.enableVersioning({ type: VersioningType.URI });
  // Signals are handled by main.ts (src/shutdown.ts), which drains requests before closing.

  const document = buildOpenApiDocument(app);
  SwaggerModule.setup('docs', app, document, {
    jsonDocumentUrl: 'openapi.json',
    raw: ['json'],
  });

  // Routes are known once the modules are resolved; the 405 check reads them from here.
  for (const path of collectGetRoutePaths(app)) knownPaths.add(path);
}

export function buildOpenApiDocument(app: INestApplication): OpenAPIObject {
  const config = new DocumentBuilder()
    .setTitle('Listing service')
    .setDescription(
      'Read-only, paginated listing of the platform’s users and login activity. ' +
        'Every /v1 route needs a bearer token with the scope it names.',
    )
    .setVersion('1.0.0')
    .addBearerAuth({ type: 'http', scheme: 'bearer', bearerFormat: 'lsk_…' }, 'bearer')
    .build();
  return SwaggerModule.createDocument(app, config);
}
