import type { Request } from 'express';

/**
 * What an export's rows cost its caller, provided under `EXPORT_BUDGET` by the rate limiter
 * (none: exports are not paced).
 */
export interface ExportBudget {
  /**
   * The pace of one export of `request`: spends each chunk's rows from the caller's budget and
   * resolves once there is room for them, in the next window if need be, or once `stopped` fires
   * (the client left). It never rejects.
   */
  paceOf(request: Request): (rows: number, stopped: AbortSignal) => Promise<void>;
}

export const EXPORT_BUDGET = Symbol('EXPORT_BUDGET');
