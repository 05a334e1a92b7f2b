import { EventEmitter } from 'node:events';
import type { Pool, PoolConnection } from 'mysql2';
import { PoolUsage } from './pool-usage';

/**
 * A stand-in for a mysql2 pool that behaves as its public surface does: `getConnection` hands out
 * a free connection (`acquire`) or makes one (`connection`, `acquire`), or queues the caller
 * (`enqueue`); a release hands the connection to the first queued caller (no event) or frees it
 * (`release`); a connection that ends or fails emits `end` / `error`.
 */
class FakePool extends EventEmitter {
  readonly free: PoolConnection[] = [];
  readonly queue: ((error: Error | null, connection: PoolConnection) => void)[] = [];
  made = 0;

  constructor(private readonly limit: number) {
    super();
  }

  getConnection(callback: (error: Error | null, connection: PoolConnection) => void): void {
    const free = this.free.pop();
    if (free) {
      this.emit('acquire', free);
      setImmediate(() => callback(null, free));
    } else if (this.made < this.limit) {
      this.made++;
      const connection = Object.assign(new EventEmitter(), {
        release: () => this.release(connection),
      }) as unknown as PoolConnection;
      setImmediate(() => {
        this.emit('connection', connection);
        this.emit('acquire', connection);
        callback(null, connection);
      });
    } else {
      this.emit('enqueue');
      this.queue.push(callback);
    }
  }

  release(connection: PoolConnection): void {
    const waiting = this.queue.shift();
    if (waiting) setImmediate(() => waiting(null, connection));
    else {
      this.free.push(connection);
      this.emit('release', connection);
    }
  }
}

describe('PoolUsage', () => {
  const acquire = (pool: Pool) =>
    new Promise<PoolConnection>((resolve, reject) =>
      pool.getConnection((error, connection) => (error ? reject(error) : resolve(connection))),
    );

  it('counts open, in use and waiting connections from the pool’s events and callbacks', async () => {
    const fake = new FakePool(2);
    const pool = fake as unknown as Pool;
    const usage = new PoolUsage('primary');
    usage.observe(pool, { connectionLimit: 2 });

    const [a, b] = await Promise.all([acquire(pool), acquire(pool)]);
    expect(usage.snapshot()).toEqual({ pool: 'primary', open: 2, inUse: 2, waiting: 0, max: 2 });

    const third = acquire(pool);
    await new Promise((resolve) => setImmediate(resolve));
    expect(usage.snapshot()).toMatchObject({ inUse: 2, waiting: 1 });

    // Handed straight to the waiting caller: still in use, nobody waits.
    a.release();
    const c = await third;
    expect(c).toBe(a);
    expect(usage.snapshot()).toMatchObject({ open: 2, inUse: 2, waiting: 0 });

    b.release();
    expect(usage.snapshot()).toMatchObject({ open: 2, inUse: 1 });

    // A connection that breaks is neither open nor in use any more.
    c.emit('error', new Error('gone'));
    expect(usage.snapshot()).toMatchObject({ open: 1, inUse: 0, waiting: 0 });
  });
});
