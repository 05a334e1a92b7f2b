import { INestApplication, VersioningType } from '@nestjs/common';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { SwaggerModule } from '@nestjs/swagger';
import helmet from 'helmet';
import { Logger } from 'nestjs-pino';
import { httpSemanticsMiddleware } from './common/http/http-semantics.middleware';
import { requestIdMiddleware } from './common/http/request-id.middleware';
import { collectGetRoutePaths } from './common/http/route-catalog';
import { configurePagination } from './common/listing/listing-query.dto';
import type { AppConfig } from './config/app-config';
import { buildOpenApiDocument } from './openapi/openapi-document';

// Kept importable from here for callers of the foundation's API.
export { buildOpenApiDocument };

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
  express.use(helmet({ contentSecurityPolicy: false, crossOriginEmbedderPolicy: false }));
  express.use(httpSemanticsMiddleware(knownPaths));
  if (config.corsOrigins.length) {
    express.enableCors({ origin: config.corsOrigins, methods: ['GET', 'HEAD'], maxAge: 600 });
  }
  app.enableVersioning({ type: VersioningType.URI });
  app.enableShutdownHooks();

  const document = buildOpenApiDocument(app);
  SwaggerModule.setup('docs', app, document, {
    jsonDocumentUrl: 'openapi.json',
    raw: ['json'],
  });

  // Routes are known once the modules are resolved; the 405 check reads them from here.
  for (const path of collectGetRoutePaths(app)) knownPaths.add(path);
}
