import { Injectable, Logger, OnApplicationShutdown } from '@nestjs/common';
import { createPool, Pool } from 'mysql2';
import { DataSource } from 'typeorm';

/** What the killer reads of a mysql2 connection: its id on the server and how it was opened. */
export interface ServerConnection {
  threadId: number | null;
  config: {
    host?: string;
    port?: number;
    user?: string;
    password?: string;
    ssl?: unknown;
  };
  destroy(): void;
}

const killers = new WeakMap<DataSource, QueryKiller>();

/**
 * Connections per server. A KILL can take a while to return (MariaDB retries waking a statement
 * that waits on a condition for up to a second): a few in parallel keep one from holding up the rest.
 */
const KILL_CONNECTIONS = 8;
/** A kill that does not answer within this is given up; the connection is dropped instead. */
const KILL_TIMEOUT_MS = 2000;

/**
 * Stops the statement a pooled connection is running (`KILL QUERY <id>`), sent through a small
 * pool of its own per server: the listing pool may be full of the very statements to stop.
 */
@Injectable()
export class QueryKiller implements OnApplicationShutdown {
  private readonly logger = new Logger(QueryKiller.name);
  private readonly pools = new Map<string, Pool>();
  private closed = false;
  private failureLoggedAt = 0;

  constructor(dataSource: DataSource) {
    killers.set(dataSource, this);
  }

  /** The killer serving `dataSource`, if the app registered one. */
  static for(dataSource: DataSource): QueryKiller | undefined {
    return killers.get(dataSource);
  }

  /** Sends `statement` (the dialect's KILL QUERY) to the server `connection` is on. */
  async kill(connection: ServerConnection, statement: string): Promise<void> {
    if (this.closed) throw new Error('the query killer is closed');
    const { host, port, user, password, ssl } = connection.config;
    const key = `${host}:${port}:${user}`;
    let pool = this.pools.get(key);
    if (!pool) {
      pool = createPool({
        host,
        port,
        user,
        password,
        ssl: ssl as never,
        connectionLimit: KILL_CONNECTIONS,
        maxIdle: 2,
        idleTimeout: 30_000,
        connectTimeout: KILL_TIMEOUT_MS,
        queueLimit: 0,
      });
      this.pools.set(key, pool);
    }
    try {
      await new Promise<void>((resolve, reject) =>
        pool.query({ sql: statement, timeout: KILL_TIMEOUT_MS }, (error) =>
          error ? reject(error) : resolve(),
        ),
      );
    } catch (error) {
      const now = Date.now();
      if (now - this.failureLoggedAt > 30_000) {
        this.failureLoggedAt = now;
        this.logger.warn(`could not stop an abandoned statement: ${(error as Error).message}`);
      }
      throw error;
    }
  }

  async onApplicationShutdown(): Promise<void> {
    this.closed = true;
    const pools = [...this.pools.values()];
    this.pools.clear();
    await Promise.all(
      pools.map((pool) => new Promise<void>((resolve) => pool.end(() => resolve()))),
    );
  }
}
