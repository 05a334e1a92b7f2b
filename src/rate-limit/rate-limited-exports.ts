import { Inject, Injectable, Logger } from '@nestjs/common';
import type { Request } from 'express';
import type { ExportBudget } from '../common/listing/export-budget';
import { APP_CONFIG, AppConfig } from '../config/app-config';
import { budgetKeyOf } from './rate-limit.middleware';
import { RateLimits } from './rate-limits';

/** An export spends one request of its caller's budget per EXPORT_ROWS_PER_REQUEST rows sent. */
@Injectable()
export class RateLimitedExports implements ExportBudget {
  private readonly logger = new Logger('RateLimit');
  private readonly rowsPerRequest: number;

  constructor(
    private readonly limits: RateLimits,
    @Inject(APP_CONFIG) config: AppConfig,
  ) {
    this.rowsPerRequest = config.exportRowsPerRequest;
  }

  paceOf(request: Request): (rows: number, stopped: AbortSignal) => Promise<void> {
    const key = budgetKeyOf(request);
    let [sent, spent] = [0, 0];
    return async (rows, stopped) => {
      sent += rows;
      const due = Math.floor(sent / this.rowsPerRequest) - spent;
      spent += due;
      try {
        await this.limits.spendWaiting(key, due, stopped);
      } catch (error) {
        // The counters failed (even the in-memory fallback): send rather than stall the export.
        this.logger.warn(`export not paced: ${String(error)}`);
      }
    };
  }
}
