import { Controller, Get, HttpStatus, ServiceUnavailableException } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import { HealthCheck, HealthCheckService, HealthIndicatorFunction } from '@nestjs/terminus';
import { Public } from '../common/auth/auth.decorators';
import { ProblemException } from '../common/problem-details/problem.exception';
import { OwnTimeLimit } from '../database/request-deadline.interceptor';
import { ReadinessIndicators } from './readiness.indicators';

@ApiExcludeController()
@Public()
@Controller('health')
export class HealthController {
  private readonly readinessChecks: HealthIndicatorFunction[];

  constructor(
    private readonly health: HealthCheckService,
    indicators: ReadinessIndicators,
  ) {
    this.readinessChecks = [() => indicators.database()];
    if (indicators.tailWatched()) this.readinessChecks.push(() => indicators.tail());
    if (indicators.replicasConfigured())
      this.readinessChecks.push(() => indicators.replicaStates());
    if (indicators.redisConfigured()) this.readinessChecks.push(() => indicators.redisPing());
  }

  /** The process is up and serving HTTP (no dependency is asked: a restart would not fix them). */
  @Get('live')
  @HealthCheck()
  live() {
    return this.health.check([]);
  }

  /**
   * The database (the primary) answers within a second. Else 503, as problem details like every
   * other error, naming what is down. The read replicas' places in the rotation and whether Redis
   * answers are in the details (`replicas`, `redis`), whatever they are.
   */
  @Get('ready')
  @HealthCheck()
  @OwnTimeLimit()
  async ready() {
    try {
      return await this.health.check(this.readinessChecks);
    } catch (error) {
      if (!(error instanceof ServiceUnavailableException)) throw error;
      const result = error.getResponse() as { error?: Record<string, { message?: string }> };
      const down = Object.entries(result.error ?? {}).map(
        ([name, check]) => `${name} is down (${check.message ?? 'error'})`,
      );
      throw new ProblemException(HttpStatus.SERVICE_UNAVAILABLE, `Not ready: ${down.join(', ')}.`, {
        headers: { 'Retry-After': '5' },
      });
    }
  }
}
