import { Inject, Injectable, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { DiscoveryService } from '@nestjs/core';
import { APP_CONFIG, AppConfig } from '../../config/app-config';
import { DatabaseAvailability } from '../../database/database-availability';
import { listingRepositories } from './listing.repository';

/** How long the highest ids go unread after a read failed (a lock, the database down). */
const PAUSE_AFTER_FAILED_READ_MS = 5000;

/**
 * Reads each listing's highest id every second (a lookup at the end of its primary key), so that
 * an id walk serves a row once a higher id has been seen TAIL_HOLDBACK_MS before
 * (`ListingWalks.heldBack`), a poll after a quiet spell included.
 */
@Injectable()
export class TailWatch implements OnApplicationBootstrap, OnModuleDestroy {
  private timer?: NodeJS.Timeout;
  private stopped = false;
  private repositories: ReturnType<typeof listingRepositories> = [];

  constructor(
    private readonly discovery: DiscoveryService,
    private readonly availability: DatabaseAvailability,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  /** Whether tail walks hold rows back at all (TAIL_HOLDBACK_MS above 0). */
  get active(): boolean {
    return this.config.tailHoldbackMs > 0;
  }

  onApplicationBootstrap(): void {
    if (!this.active) return;
    this.repositories = listingRepositories(this.discovery);
    let reading = false;
    let pausedUntil = 0;
    // A short limit of its own: a table another session locks must not hold a pool connection
    // (with DB_POOL_SIZE=1, the requests' only one) for long; after a failure they have it a while.
    const { statementTimeoutMs: limitMs } = this.config.database;
    const options = { statementTimeoutMs: limitMs > 0 ? Math.min(1000, limitMs) : 1000 };
    void this.availability.whenUp().then(() => {
      if (this.stopped) return;
      this.timer = setInterval(
        () => {
          if (reading || Date.now() < pausedUntil) return;
          reading = true;
          // A failed read only leaves the hold-back on the rows' own times a while longer.
          void Promise.allSettled(this.repositories.map((r) => r.highestIdNow(options))).then(
            (reads) => {
              reading = false;
              if (reads.some(({ status }) => status === 'rejected')) {
                pausedUntil = Date.now() + PAUSE_AFTER_FAILED_READ_MS;
              }
            },
          );
        },
        Math.min(1000, Math.max(100, this.config.tailHoldbackMs / 4)),
      );
      this.timer.unref();
    });
  }

  /**
   * Whether every listing has an id seen TAIL_HOLDBACK_MS before what a read `staleMs` behind holds:
   * until then (after a start) an id walk could not tell a back-dated row from one that may
   * overtake a lower id (readiness waits for it).
   */
  settled(staleMs = 0): boolean {
    if (!this.active) return true;
    const asOf = Date.now() - staleMs;
    return this.repositories.every((repository) => repository.settledId(asOf) !== undefined);
  }

  onModuleDestroy(): void {
    this.stopped = true;
    clearInterval(this.timer);
  }
}
