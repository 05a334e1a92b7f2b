import {
  Inject,
  Injectable,
  Logger,
  OnApplicationBootstrap,
  OnModuleDestroy,
} from '@nestjs/common';
import { DiscoveryService } from '@nestjs/core';
import { APP_CONFIG, AppConfig } from '../../config/app-config';
import { DatabaseAvailability } from '../../database/database-availability';
import { ListingTotals } from './listing-totals';
import { ListingRollups } from './listing-rollup';
import { listingRepositories, type ListingRepository } from './listing.repository';
import { TailWatch } from './tail-watch';

type AnyListingRepository = ListingRepository<{ id: number }>;

/**
 * Once the database is up, builds the rollups and counts in the background the totals and
 * histograms a first visit of each listing would wait for: unfiltered, and by each value of its
 * few-valued filters (COUNT_CACHE_WARMUP).
 */
@Injectable()
export class ListingWarmup implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger(ListingWarmup.name);
  private pending = 0;
  private stopped = false;
  private recounting?: NodeJS.Timeout;

  constructor(
    private readonly discovery: DiscoveryService,
    private readonly totals: ListingTotals,
    private readonly rollups: ListingRollups,
    private readonly availability: DatabaseAvailability,
    private readonly tailWatch: TailWatch,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  onApplicationBootstrap(): void {
    if (!this.config.countCacheWarmup || this.config.countCacheTtlMs === 0) return;
    const work = listingRepositories(this.discovery).flatMap((repository) =>
      warmupFilters(repository).map((filters) => ({ repository, filters })),
    );
    this.pending = work.length;
    const repositories = [...new Set(work.map(({ repository }) => repository))];
    void this.availability.whenUp().then(async () => {
      await this.settled();
      const started = Date.now();
      // The rollups first: the totals of the few-valued filters' values come from them, and the
      // values of rolled-up columns that declare none (users' roles).
      for (const repository of repositories) {
        if (this.stopped) return;
        await this.rollups.build(repository).catch(() => undefined); // logged by the rollups
        const found = this.rollups
          .filterValues(repository)
          .map((filters) => ({ repository, filters }));
        work.push(...found);
        this.pending += found.length;
      }
      for (const { repository, filters } of work) {
        if (this.stopped) return;
        await this.warm(repository, filters);
        this.pending--;
      }
      this.logger.log(
        `counted ${work.length} totals with their histograms in ${((Date.now() - started) / 1000).toFixed(1)} s`,
      );
      this.keepTablesCounted(repositories);
    });
  }

  onModuleDestroy(): void {
    this.stopped = true;
    clearInterval(this.recounting);
  }

  /**
   * Each table's total and histograms, counted in full again every COUNT_CACHE_FULL_RECOUNT_MS:
   * plans read them without asking for them (implied id bounds, walk bounds), so without this they
   * would stay as the warm-up counted them, and a walk bound's rows changed since would only grow.
   */
  private keepTablesCounted(repositories: AnyListingRepository[]): void {
    const every = this.config.countCacheFullRecountMs;
    if (every <= 0 || this.stopped) return;
    let running = false;
    this.recounting = setInterval(() => {
      if (running) return;
      running = true;
      void (async () => {
        for (const repository of repositories) {
          if (!this.stopped) await this.warm(repository, {}, true);
        }
      })().finally(() => (running = false));
    }, every);
    this.recounting.unref();
  }

  /**
   * Once each table has a settled id (TailWatch): the rollups and histograms then hold every row
   * up to it, a row committed late too, which the implied id bounds rely on (`impliedIdBounds`).
   */
  private async settled(): Promise<void> {
    while (!this.stopped && !this.tailWatch.settled()) {
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  /** `ListingTotals.warm`, its failure logged unless the pool closed under it at shutdown. */
  private async warm(
    repository: AnyListingRepository,
    filters: Record<string, unknown>,
    full = false,
  ): Promise<void> {
    try {
      await this.totals.warm(repository, filters, full);
    } catch (error) {
      if (this.stopped) return;
      this.logger.warn(
        `Warming ${repository.definition.resource} ${JSON.stringify(filters)} failed: ${(error as Error).message}`,
      );
    }
  }

  /** How many totals (with their histograms) are still to be counted. */
  remaining(): number {
    return this.pending;
  }
}

/** No filter, then each value of each filter that accepts only a few. */
function warmupFilters(repository: AnyListingRepository): Record<string, unknown>[] {
  const filters = Object.entries(repository.definition.filters);
  return [
    {},
    ...filters.flatMap(([parameter, { values }]) =>
      (values ?? []).map((value) => ({ [parameter]: value })),
    ),
  ];
}
