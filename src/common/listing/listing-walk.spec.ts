import type { ListingDefinition } from './listing-definition';
import type { ListingCriteria } from './listing-criteria';
import { bucketSums, highestIdTo, impliedIdBounds, lowestIdFrom } from './listing-walk';
import type { Bucket } from './listing.repository';

describe('bucket sums (a histogram read once, then by binary search)', () => {
  // Hours 10, 11, 13 and 20; a late commit gave hour 13 an id below hour 11's.
  const buckets: Bucket[] = [
    [10, 3, 1, 3],
    [11, 2, 7, 9],
    [13, 4, 5, 12],
    [20, 1, 15, 15],
  ];
  const sums = bucketSums(buckets);

  it('sums the rows, and knows whether every bucket has its ids', () => {
    expect(sums).toMatchObject({ rows: 10, everyId: true });
    expect(bucketSums([...buckets, [21, 1]]).everyId).toBe(false);
  });

  it.each([
    [0, 1],
    [11, 5],
    [12, 5],
    [14, 15],
    [20, 15],
    [21, undefined],
  ])('gives the lowest id of the buckets from %p on: %p', (index, lowest) => {
    expect(lowestIdFrom(buckets, sums, index)).toBe(lowest);
  });

  it.each([
    [9, undefined],
    [10, 3],
    [12, 9],
    [13, 12],
    [99, 15],
  ])('gives the highest id of the buckets up to %p: %p', (index, highest) => {
    expect(highestIdTo(buckets, sums, index)).toBe(highest);
  });

  it('takes a histogram of 200k hours (23 years), past what spreading its ids into Math.min takes', () => {
    const hours = Array.from({ length: 200_000 }, (_, i): Bucket => [i, 1, i + 1, i + 1]);
    const many = bucketSums(hours);
    expect(lowestIdFrom(hours, many, 5)).toBe(6);
    expect(highestIdTo(hours, many, 150_000)).toBe(150_001);
  });
});

describe('implied id bounds of a time window', () => {
  const HOUR = 3_600_000;
  // Hours 10 to 13 of a log, ids growing with time; hour 12 took a row committed late (id 31).
  const buckets: Bucket[] = [
    [10, 10, 1, 10],
    [11, 10, 11, 20],
    [12, 11, 21, 31],
    [13, 10, 32, 41],
  ];
  const definition = { immutableTimestamps: ['created_at'] } as unknown as ListingDefinition;
  const bounds = (between: { from?: number; to?: number }) =>
    impliedIdBounds(
      definition,
      {
        conditions: [
          { sql: '', params: {}, binds: { column: 'created_at', range: true }, between },
        ],
      } as unknown as ListingCriteria,
      () => ({ size: HOUR, buckets, maxId: 41 }),
      bucketSums,
    ).implied.map(({ params }) => params);

  it('reads only the ids of the hours the window reaches, no hour more each side', () => {
    // Half past 11 to half past 12: hours 11 and 12, ids 11 to 31 (the late row's included).
    expect(bounds({ from: 11.5 * HOUR, to: 12.5 * HOUR - 1 })).toEqual([
      { implied_0_from: 11 },
      { implied_0_to: 31, implied_0_seen: 41 },
    ]);
  });

  it('leaves out a bound that every id the histogram has seen meets', () => {
    expect(bounds({ to: 13.5 * HOUR })).toEqual([]);
    expect(bounds({ from: 14 * HOUR })).toEqual([{ implied_0_from: 42 }]);
  });
});
