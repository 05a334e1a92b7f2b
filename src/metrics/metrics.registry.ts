import { collectDefaultMetrics, Registry } from 'prom-client';

/**
 * The app's own registry (not prom-client's global one), so that two app instances in one
 * process (tests) keep separate counts. Default process metrics are collected into it.
 */
export class MetricsRegistry extends Registry {
  constructor() {
    super();
    collectDefaultMetrics({ register: this });
  }
}
