import { VersioningType } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { OpenAPIObject } from '@nestjs/swagger';
import { join } from 'node:path';
import { AppModule } from '../app.module';
import { loadConfig } from '../config/app-config';
import { buildOpenApiDocument } from './openapi-document';

/** Where the checked-in document lives, relative to the repository root. */
export const OPENAPI_FILE = join(__dirname, '..', '..', 'openapi.json');

/**
 * Builds the document without a database: the app is assembled in preview mode (modules and
 * routes resolved, no provider instantiated, no connection opened), from the default
 * configuration only, so the result does not depend on the machine's environment.
 */
export async function generateOpenApiDocument(): Promise<OpenAPIObject> {
  const config = loadConfig({ NODE_ENV: 'production', LOG_LEVEL: 'silent' });
  const app = await NestFactory.create(AppModule.forRoot(config), {
    preview: true,
    logger: false,
    abortOnError: false,
  });
  try {
    app.enableVersioning({ type: VersioningType.URI });
    return buildOpenApiDocument(app, config.pagination);
  } finally {
    await app.close();
  }
}

/** The document as it is checked in: two-space JSON with a final newline. */
export const serializeOpenApiDocument = (document: OpenAPIObject): string =>
  `${JSON.stringify(document, null, 2)}\n`;
