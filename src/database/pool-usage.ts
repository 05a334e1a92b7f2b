import * as mysql2 from 'mysql2';
import type { Pool, PoolConnection, PoolOptions } from 'mysql2';

/** What a pool's gauges show: its connections and the requests waiting for one. */
export interface PoolSnapshot {
  pool: string;
  open: number;
  inUse: number;
  waiting: number;
  max: number;
}

/**
 * One mysql2 pool's connections, counted from what the pool says in public: its `connection`,
 * `acquire` and `release` events, each connection's `end` and `error`, and the callbacks of
 * `getConnection` (counted by a wrapper around it): no driver internals are read.
 */
export class PoolUsage {
  private readonly open = new Set<PoolConnection>();
  private readonly inUse = new Set<PoolConnection>();
  private waiting = 0;
  private max = 0;
  /** Whether its pool exists yet (a replica's is made once the replica first answers). */
  observed = false;

  constructor(readonly name: string) {}

  snapshot(): PoolSnapshot {
    return {
      pool: this.name,
      open: this.open.size,
      inUse: this.inUse.size,
      waiting: this.waiting,
      max: this.max,
    };
  }

  /**
   * Drops the connections still in use after `graceMs` (a statement on TypeORM's own path held up),
   * and the free ones that do not answer a ping within it (a statement its caller gave up on at
   * its client bound is still queued there): the pool's close would wait for their statements.
   */
  async dropStuck(graceMs: number): Promise<void> {
    const until = Date.now() + graceMs;
    while (this.inUse.size > 0 && Date.now() < until) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    const free = [...this.open].filter((connection) => !this.inUse.has(connection));
    const silent = await Promise.all(free.map((connection) => answersNot(connection, graceMs)));
    const stuck = [...this.inUse, ...free.filter((_, i) => silent[i])];
    for (const connection of stuck) connection.destroy();
  }

  /** Starts counting `pool`, just created with `options` (before its first connection). */
  observe(pool: Pool, options: PoolOptions): void {
    this.observed = true;
    this.max = options.connectionLimit ?? 10;
    const track = (connection: PoolConnection) => {
      if (this.open.has(connection)) return;
      this.open.add(connection);
      const gone = () => {
        this.open.delete(connection);
        this.inUse.delete(connection);
      };
      connection.once('end', gone);
      connection.once('error', gone);
    };
    pool.on('connection', track);
    pool.on('acquire', (connection) => {
      track(connection);
      this.inUse.add(connection);
    });
    pool.on('release', (connection) => this.inUse.delete(connection));
    // A released connection handed straight to a waiting caller emits no event: the wrapped
    // callback sees it, and it stays in use. The pool calls this wrapper again itself when it
    // replaces a dropped connection for a waiting caller; both calls settle, so the count holds.
    const getConnection = pool.getConnection.bind(pool);
    pool.getConnection = (callback) => {
      this.waiting++;
      getConnection((error, connection) => {
        this.waiting--;
        if (!error) {
          track(connection);
          this.inUse.add(connection);
        }
        callback(error, connection);
      });
    };
  }
}

/** Whether `connection` fails a ping, or does not answer it within `ms`. */
const answersNot = (connection: PoolConnection, ms: number): Promise<boolean> =>
  new Promise((resolve) => {
    const timer = setTimeout(() => resolve(true), ms);
    connection.ping((error) => {
      clearTimeout(timer);
      resolve(error !== null && error !== undefined);
    });
  });

/**
 * mysql2 as TypeORM's `driver` option, with each pool it creates counted by `usage`: TypeORM
 * creates its pool through the driver it is given, so the pool is counted from its first
 * connection on.
 */
export function countedMysqlDriver(usage: PoolUsage): typeof mysql2 {
  return {
    ...mysql2,
    createPool: ((options: PoolOptions) => {
      const pool = mysql2.createPool(options);
      usage.observe(pool, options);
      return pool;
    }) as typeof mysql2.createPool,
  };
}

/** The pools of the app (the primary's, each replica's), by name, for the metrics. */
export class DatabasePools {
  private readonly usages = new Map<string, PoolUsage>();

  /** The usage of the pool called `name`, made at its first mention. */
  usage(name: string): PoolUsage {
    let usage = this.usages.get(name);
    if (!usage) {
      usage = new PoolUsage(name);
      this.usages.set(name, usage);
    }
    return usage;
  }

  /** `PoolUsage.dropStuck` on every pool. */
  async dropStuck(graceMs: number): Promise<void> {
    await Promise.all([...this.usages.values()].map((usage) => usage.dropStuck(graceMs)));
  }

  snapshots(): PoolSnapshot[] {
    return [...this.usages.values()]
      .filter((usage) => usage.observed)
      .map((usage) => usage.snapshot());
  }
}
