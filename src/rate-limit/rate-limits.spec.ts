import type { AppConfig } from '../config/app-config';
import type { SharedRedis } from '../redis/shared-redis';
import { RateLimits } from './rate-limits';

/** Counters in memory, `perMinute` requests a minute. */
const limitsOf = (perMinute: number) =>
  new RateLimits(
    { rateLimit: { perMinute, authFailuresPerMinute: 5 }, redisKeyPrefix: 'spec:' } as AppConfig,
    { client: () => undefined } as unknown as SharedRedis,
  );

describe('RateLimits.spendWaiting', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  it('spends past a window by waiting for the next ones, never running past the budget', async () => {
    const limits = limitsOf(10);
    let done = false;
    // 25 points at 10 a minute: this window's 10, the next one's 10, then 5 as the third begins.
    const spending = limits.spendWaiting('token:a', 25).then(() => (done = true));
    await jest.advanceTimersByTimeAsync(59_000);
    expect(done).toBe(false);
    expect((await limits.consume('token:a')).allowed).toBe(false);
    await jest.advanceTimersByTimeAsync(60_000);
    expect(done).toBe(false);
    await jest.advanceTimersByTimeAsync(2_000);
    await spending;
    expect(done).toBe(true);
    const after = await limits.consume('token:a');
    expect(after).toMatchObject({ allowed: true, remaining: 4 });
  });
});

describe('RateLimits.consume and giveBack', () => {
  it('counts no refused request: a request given back goes to the next one', async () => {
    const limits = limitsOf(3);
    const decisions = [];
    for (let i = 0; i < 5; i++) decisions.push(await limits.consume('token:b'));
    expect(decisions.map((d) => d.allowed)).toEqual([true, true, true, false, false]);
    await limits.giveBack('token:b', decisions[0]);
    expect(await limits.consume('token:b')).toMatchObject({ allowed: true, remaining: 0 });
    // Nothing is given back to a budget that counted nothing (a store that was away).
    await limits.giveBack('token:c', decisions[0]);
    expect(await limits.consume('token:c')).toMatchObject({ allowed: true, remaining: 2 });
  });
});
