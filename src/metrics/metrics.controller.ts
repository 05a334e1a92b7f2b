import { Controller, Get, Headers, HttpStatus, Inject, Res } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import type { Response } from 'express';
import { createHash, timingSafeEqual } from 'node:crypto';
import { bearerCredentials } from '../auth/token-format';
import { Public } from '../common/auth/auth.decorators';
import { ProblemException } from '../common/problem-details/problem.exception';
import { APP_CONFIG, AppConfig } from '../config/app-config';
import { MetricsRegistry } from './metrics.registry';

const digest = (value: string) => createHash('sha256').update(value).digest();

/**
 * Prometheus scrape endpoint, outside /v1 and out of the OpenAPI document. API tokens do not
 * apply (@Public); when METRICS_TOKEN is set, the scraper must present that one as a bearer token.
 */
@ApiExcludeController()
@Public()
@Controller('metrics')
export class MetricsController {
  private readonly expected?: Buffer;

  constructor(
    private readonly registry: MetricsRegistry,
    @Inject(APP_CONFIG) config: AppConfig,
  ) {
    if (config.metrics.token) this.expected = digest(config.metrics.token);
  }

  @Get()
  async scrape(
    @Headers('authorization') authorization: string | undefined,
    @Res() response: Response,
  ): Promise<void> {
    this.authorize(authorization);
    response
      .status(HttpStatus.OK)
      .type(this.registry.contentType)
      .setHeader('Cache-Control', 'no-store')
      .send(await this.registry.metrics());
  }

  private authorize(authorization: string | undefined): void {
    if (!this.expected) return;
    const presented = bearerCredentials(authorization) ?? undefined;
    // Hashes have equal length, so the comparison takes the same time whatever was sent.
    if (presented !== undefined && timingSafeEqual(digest(presented), this.expected)) return;
    throw new ProblemException(HttpStatus.UNAUTHORIZED, 'Metrics need the metrics bearer token.', {
      headers: {
        'WWW-Authenticate':
          presented === undefined
            ? 'Bearer realm="metrics"'
            : 'Bearer realm="metrics", error="invalid_token"',
      },
    });
  }
}
