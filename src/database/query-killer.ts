import { Inject, Injectable, Logger, OnApplicationShutdown } from '@nestjs/common';
import { createPool, Pool } from 'mysql2';
import { mysql2Connection } from './database-url';
import { APP_CONFIG, AppConfig } from '../config/app-config';

/** What the killer reads of a mysql2 connection: its id on the server and which server it is on. */
export interface ServerConnection {
  threadId: number | null;
  config: { host?: string; port?: number };
  destroy(): void;
}

/**
 * Connections per server. A KILL can take a while to return (MariaDB retries waking a statement
 * that waits on a condition for up to a second): a few in parallel keep one from holding up the rest.
 */
const KILL_CONNECTIONS = 8;
/** A kill that does not answer within this is given up; the connection is dropped instead. */
const KILL_TIMEOUT_MS = 2000;

const serverKey = (host: string | undefined, port: number | undefined) =>
  `${host ?? 'localhost'}:${port ?? 3306}`;

/**
 * Stops the statement a pooled connection is running (`KILL QUERY <id>`), sent through a small
 * pool of its own per server: the listing pool may be full of the very statements to stop. Its
 * servers and credentials are the validated configuration's (DATABASE_URL and the replicas').
 */
@Injectable()
export class QueryKiller implements OnApplicationShutdown {
  private readonly logger = new Logger(QueryKiller.name);
  /** The URL of each server, by host and port; its pool is opened at its first kill. */
  private readonly urls = new Map<string, string>();
  private readonly pools = new Map<string, Pool>();
  private closed = false;
  private failureLoggedAt = 0;

  constructor(@Inject(APP_CONFIG) config: AppConfig) {
    const { database } = config;
    if (database.kind !== 'mysql' || !database.url) return;
    for (const url of [database.url, ...database.replicaUrls]) {
      const { hostname, port } = new URL(url);
      this.urls.set(serverKey(decodeURIComponent(hostname), port ? Number(port) : undefined), url);
    }
  }

  /** Sends `statement` (the dialect's KILL QUERY) to the server `connection` is on. */
  async kill(connection: ServerConnection, statement: string): Promise<void> {
    if (this.closed) throw new Error('the query killer is closed');
    const key = serverKey(connection.config.host, connection.config.port);
    try {
      const pool = this.poolFor(key);
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

  private poolFor(key: string): Pool {
    let pool = this.pools.get(key);
    if (pool) return pool;
    // A host spelled differently from its URL (case, brackets) is still the one server there is.
    const uri =
      this.urls.get(key) ?? (this.urls.size === 1 ? [...this.urls.values()][0] : undefined);
    if (!uri) throw new Error(`no configured database server at ${key}`);
    pool = createPool({
      ...mysql2Connection(uri),
      connectionLimit: KILL_CONNECTIONS,
      maxIdle: 2,
      idleTimeout: 30_000,
      connectTimeout: KILL_TIMEOUT_MS,
      queueLimit: 0,
    });
    this.pools.set(key, pool);
    return pool;
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
