import { Injectable } from '@nestjs/common';
import { Gauge } from 'prom-client';
import { ListingWarmup } from '../common/listing/listing-warmup';
import { MetricsRegistry } from './metrics.registry';

/** The count cache's warm-up after a start: how many totals it still has to count. */
@Injectable()
export class ListingMetrics {
  constructor(warmup: ListingWarmup, registry: MetricsRegistry) {
    new Gauge({
      name: 'listing_warmup_pending',
      help: 'Listing totals (with their histograms) the warm-up after a start has still to count.',
      registers: [registry],
      collect() {
        this.set(warmup.remaining());
      },
    });
  }
}
