import type { Type } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { pool } from './reference-listing';

/**
 * Serves a NestJS yardstick (reference-nest-server.ts, reference-design-server.ts) on PORT, with no
 * logger and no body parsers, and closes it and the listing's pool on SIGTERM.
 */
export async function serveYardstick(module: Type<unknown>): Promise<void> {
  const app = await NestFactory.create(module, { logger: false, bodyParser: false });
  await app.listen(Number(process.env.PORT), '127.0.0.1');
  process.once('SIGTERM', () => {
    void app
      .close()
      .then(() => pool.end())
      .then(() => process.exit(0));
  });
}
