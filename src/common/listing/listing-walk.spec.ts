import { bucketSums, highestIdTo, lowestIdFrom } from './listing-walk';
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
