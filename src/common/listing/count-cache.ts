import { Inject, Injectable } from '@nestjs/common';
import { APP_CONFIG, AppConfig } from '../../config/app-config';

interface Entry {
  value: number;
  expiresAt: number;
}

/**
 * Caches listing totals for a short time so that `page_count` does not cost a full COUNT per
 * request. One count runs per key at a time: concurrent requests for the same key share it.
 * The rows of a page are never cached; only the total may be up to the TTL old.
 */
@Injectable()
export class CountCache {
  private readonly entries = new Map<string, Entry>();
  private readonly inFlight = new Map<string, Promise<number>>();
  private readonly ttlMs: number;
  private static readonly MAX_ENTRIES = 10_000;

  constructor(@Inject(APP_CONFIG) config: AppConfig) {
    this.ttlMs = config.countCacheTtlMs;
  }

  async get(key: string, compute: () => Promise<number>): Promise<number> {
    const now = Date.now();
    const cached = this.entries.get(key);
    if (cached && cached.expiresAt > now) return cached.value;

    const running = this.inFlight.get(key);
    if (running) return running;

    const promise = compute()
      .then((value) => {
        if (this.ttlMs > 0) this.remember(key, value);
        return value;
      })
      .finally(() => this.inFlight.delete(key));
    this.inFlight.set(key, promise);
    return promise;
  }

  private remember(key: string, value: number): void {
    if (this.entries.size >= CountCache.MAX_ENTRIES) {
      const oldest = this.entries.keys().next().value;
      if (oldest !== undefined) this.entries.delete(oldest);
    }
    this.entries.delete(key);
    this.entries.set(key, { value, expiresAt: Date.now() + this.ttlMs });
  }
}
