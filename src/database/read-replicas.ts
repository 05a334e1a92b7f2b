import {
  Inject,
  Injectable,
  Logger,
  OnApplicationBootstrap,
  OnApplicationShutdown,
} from '@nestjs/common';
import { Connection, createConnection } from 'mysql2';
import { DataSource, EntitySubscriberInterface } from 'typeorm';
import { APP_CONFIG, AppConfig } from '../config/app-config';
import { buildReplicaDataSourceOptions } from './app-data-source-options';
import { mysql2Connection } from './database-url';
import { reasonOf } from './database-availability';
import { DatabasePools } from './pool-usage';
import {
  judgeReplica,
  lagBoundMs,
  OutOfRotationReason,
  readReplicaStatus,
  ReplicaStatus,
} from './replica-status';

/** How often each replica's health and lag are checked, and how long a check may take. */
const CHECK_INTERVAL_MS = 1000;
const CHECK_TIMEOUT_MS = 1000;
/** A replica whose last passed check is older than this serves no reads (a stuck checker). */
const CHECK_VALID_MS = 5000;

/** A server that serves listing reads: a replica in the rotation, or the primary. */
export interface ReadSource {
  /** `primary`, or `replica0`, `replica1`, … in DATABASE_REPLICA_URLS' order. */
  readonly name: string;
  readonly dataSource: DataSource;
  readonly isReplica: boolean;
  /**
   * How far behind the primary a read started now may be, in ms (0 on the primary): on a replica
   * the lag its last check measured, rounded up to the next second, plus the time since that check.
   */
  staleMs(): number;
}

/** A replica's place in the rotation, as the health details and the metrics show it. */
export interface ReplicaState {
  name: string;
  inRotation: boolean;
  reason?: OutOfRotationReason;
  /** More on the reason, safe to show (no host names): `ECONNREFUSED`, `12 s behind`, … */
  detail?: string;
  /** Seconds behind the primary at its last check; null when unknown. */
  lagSeconds: number | null;
}

class Replica implements ReadSource {
  readonly isReplica = true;
  inRotation = false;
  reason: OutOfRotationReason = 'unchecked';
  detail = 'not checked yet';
  lagSeconds: number | null = null;
  /** When the last check that put it in (or kept it in) the rotation started. */
  checkedAt = 0;
  statusConnection?: Connection;
  statusStatement = 'SHOW REPLICA STATUS';
  initializing?: Promise<unknown>;
  /** Fired when a check finds it down: the reads still waiting on it go to the primary. */
  lost = new AbortController();

  constructor(
    readonly name: string,
    readonly url: string,
    readonly dataSource: DataSource,
  ) {}

  staleMs(): number {
    return Date.now() - this.checkedAt + lagBoundMs(this.lagSeconds ?? 0);
  }
}

/** The primary as a read source. */
class Primary implements ReadSource {
  readonly name = 'primary';
  readonly isReplica = false;
  constructor(readonly dataSource: DataSource) {}
  staleMs(): number {
    return 0;
  }
}

type Verdict =
  | { inRotation: true; lagSeconds: number }
  | {
      inRotation: false;
      reason: OutOfRotationReason;
      detail: string;
      lagSeconds: number | null;
      /** The server's own words on a replication error: for the log, never the health reply. */
      error?: string;
    };

/**
 * The read replicas (DATABASE_REPLICA_URLS) and which of them serve listing reads. Each has a
 * pool of its own (a TypeORM data source, connected once it first passes a check) and is checked
 * every second on a connection of its own: `SHOW REPLICA STATUS` says whether it replicates
 * (both threads running) and how far behind it is. A replica that is down, does not replicate or
 * is more than REPLICA_MAX_LAG_MS behind leaves the rotation, and a request whose statement loses
 * its connection there takes it out at once; it returns once a check passes. With no replica in
 * the rotation, reads go to the primary. See docs/decisions/replica-lag.md.
 */
@Injectable()
export class ReadReplicas implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('ReadReplicas');
  readonly primary: ReadSource;
  private readonly replicas: Replica[];
  private readonly maxLagMs: number;
  private readonly subscribers: EntitySubscriberInterface[] = [];
  private next = 0;
  private timer?: NodeJS.Timeout;
  private round?: Promise<void>;
  private stopped = false;

  constructor(primary: DataSource, @Inject(APP_CONFIG) config: AppConfig, pools: DatabasePools) {
    this.primary = new Primary(primary);
    this.maxLagMs = config.database.replicaMaxLagMs;
    this.replicas = config.database.replicaUrls.map((url, index) => {
      const name = `replica${index}`;
      const options = buildReplicaDataSourceOptions(config, url, pools.usage(name));
      return new Replica(name, url, new DataSource(options));
    });
  }

  /** Where the next listing read goes: the next replica in the rotation, else the primary. */
  source(): ReadSource {
    const serving = this.serving();
    if (serving.length === 0) return this.primary;
    return serving[this.next++ % serving.length];
  }

  /** How far behind the primary the stalest source a read may go to is (0: the primary). */
  mostStaleMs(): number {
    return Math.max(0, ...this.serving().map((replica) => replica.staleMs()));
  }

  private serving(): Replica[] {
    const now = Date.now();
    return this.replicas.filter(
      (replica) => replica.inRotation && now - replica.checkedAt < CHECK_VALID_MS,
    );
  }

  /**
   * A request's statement lost its connection on `source`, and runs again on the primary: a
   * replica leaves the rotation at once (its next passing check brings it back), so that the
   * next requests do not try it. Logged once per such statement.
   */
  failed(source: ReadSource, error: unknown): void {
    const replica = this.replicas.find((candidate) => candidate === source);
    if (!replica) return;
    const detail = `a request's statement failed there (${reasonOf(error)}) and runs again on the primary`;
    if (!replica.inRotation) {
      this.logger.warn(`${replica.name}: ${detail}`);
      return;
    }
    this.update(replica, {
      inRotation: false,
      reason: 'failed',
      detail,
      lagSeconds: replica.lagSeconds,
    });
  }

  /**
   * What fires when `source` (a replica) is found down while a read waits on it: a silent server
   * (a partition, a frozen host) would otherwise hold the read until its statement's bound.
   */
  lostSignal(source: ReadSource): AbortSignal | undefined {
    return this.replicas.find((replica) => replica === source)?.lost.signal;
  }

  /** Each replica's place in the rotation, and why it is out. */
  states(): ReplicaState[] {
    return this.replicas.map(({ name, inRotation, reason, detail, lagSeconds }) =>
      inRotation
        ? { name, inRotation, lagSeconds }
        : { name, inRotation, reason, detail, lagSeconds },
    );
  }

  /** Adds `subscriber` (the query metrics) to every replica's data source, now and once connected. */
  subscribe(subscriber: EntitySubscriberInterface): void {
    this.subscribers.push(subscriber);
    for (const { dataSource } of this.replicas) {
      if (dataSource.isInitialized) dataSource.subscribers.push(subscriber);
    }
  }

  onApplicationBootstrap(): void {
    if (this.replicas.length > 0) this.schedule(0);
  }

  async onApplicationShutdown(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.round;
    await Promise.all(
      this.replicas.map(async (replica) => {
        replica.statusConnection?.destroy();
        replica.statusConnection = undefined;
        await replica.initializing?.catch(() => undefined);
        if (replica.dataSource.isInitialized) await replica.dataSource.destroy();
      }),
    );
  }

  private schedule(delayMs: number): void {
    this.timer = setTimeout(() => {
      this.round = Promise.all(this.replicas.map((replica) => this.check(replica)))
        .then(() => undefined)
        .finally(() => {
          this.round = undefined;
          if (!this.stopped) this.schedule(CHECK_INTERVAL_MS);
        });
    }, delayMs);
    this.timer.unref();
  }

  private async check(replica: Replica): Promise<void> {
    const startedAt = Date.now();
    let verdict: Verdict;
    try {
      const status = await this.status(replica);
      const judged = judgeReplica(status, this.maxLagMs);
      const lagSeconds = status?.secondsBehind ?? null;
      verdict = judged.inRotation
        ? { inRotation: true, lagSeconds: lagSeconds ?? 0 }
        : { ...judged, lagSeconds, error: status?.lastError };
      if (verdict.inRotation && !replica.dataSource.isInitialized) await this.connect(replica);
    } catch (error) {
      const permission = (error as { errno?: unknown }).errno === ER_SPECIFIC_ACCESS_DENIED;
      verdict = permission
        ? {
            inRotation: false,
            reason: 'not_permitted',
            detail: 'needs SLAVE MONITOR (MariaDB) or REPLICATION CLIENT (MySQL)',
            lagSeconds: null,
          }
        : { inRotation: false, reason: 'down', detail: reasonOf(error), lagSeconds: null };
    }
    if (this.stopped) return;
    if (verdict.inRotation) replica.checkedAt = startedAt;
    this.update(replica, verdict);
  }

  /** The replica's replication status, read on its own connection (opened when needed). */
  private async status(replica: Replica): Promise<ReplicaStatus | undefined> {
    try {
      const rows = await this.query(replica, replica.statusStatement);
      return readReplicaStatus(rows[0]);
    } catch (error) {
      // MySQL before 8.0.22 knows only the old spelling.
      if ((error as { errno?: unknown }).errno !== ER_PARSE_ERROR) throw error;
      replica.statusStatement = 'SHOW SLAVE STATUS';
      return readReplicaStatus((await this.query(replica, replica.statusStatement))[0]);
    }
  }

  private query(replica: Replica, sql: string): Promise<Record<string, unknown>[]> {
    const connection = (replica.statusConnection ??= this.openStatusConnection(replica));
    const drop = () => {
      if (replica.statusConnection === connection) replica.statusConnection = undefined;
      connection.destroy();
    };
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        drop();
        reject(Object.assign(new Error('the check timed out'), { code: 'timeout' }));
      }, CHECK_TIMEOUT_MS);
      connection.query({ sql, timeout: CHECK_TIMEOUT_MS }, (error, rows) => {
        clearTimeout(timer);
        if (error) {
          // A fresh connection next time: a privilege granted since applies to new sessions only.
          drop();
          reject(error);
        } else {
          resolve(rows as Record<string, unknown>[]);
        }
      });
    });
  }

  /** A connection for the checks alone: a check must not queue behind the requests' statements. */
  private openStatusConnection(replica: Replica): Connection {
    const connection = createConnection({
      ...mysql2Connection(replica.url),
      connectTimeout: CHECK_TIMEOUT_MS,
    });
    // A connection that breaks is dropped; the next check opens another.
    connection.on('error', () => {
      if (replica.statusConnection === connection) replica.statusConnection = undefined;
      connection.destroy();
    });
    return connection;
  }

  /** Opens the replica's pool (TypeORM's initialize makes a first connection to test it). */
  private async connect(replica: Replica): Promise<void> {
    replica.initializing ??= replica.dataSource
      .initialize()
      .then(() => replica.dataSource.subscribers.push(...this.subscribers))
      .finally(() => (replica.initializing = undefined));
    await replica.initializing;
  }

  private update(replica: Replica, verdict: Verdict): void {
    const wasIn = replica.inRotation;
    const previousReason = replica.reason;
    replica.lagSeconds = verdict.lagSeconds;
    replica.inRotation = verdict.inRotation;
    if (verdict.inRotation) {
      if (!wasIn) {
        this.logger.log(
          `${replica.name} in the read rotation (${verdict.lagSeconds} s behind the primary)`,
        );
      }
      return;
    }
    replica.detail = verdict.detail;
    replica.reason = verdict.reason;
    if (verdict.reason === 'down') {
      replica.lost.abort(new ReplicaLostError(replica.name));
      replica.lost = new AbortController();
    }
    if (!wasIn && previousReason === verdict.reason) return;
    const left = this.replicas.filter((candidate) => candidate.inRotation).length;
    this.logger.warn(
      `${replica.name} out of the read rotation: ${verdict.reason} (${verdict.detail}); ` +
        (left > 0 ? `${left} replica(s) left in it` : 'reads go to the primary') +
        (verdict.error ? `; the replica says: ${verdict.error.slice(0, 300)}` : ''),
    );
  }
}

/** A read's replica was found down while the read waited on it. */
export class ReplicaLostError extends Error {
  readonly code = 'replica_down';
  constructor(name: string) {
    super(`${name} was found down while the read waited on it`);
  }
}

/** `SHOW … STATUS` without the privilege to; a statement the server cannot parse. */
const ER_SPECIFIC_ACCESS_DENIED = 1227;
const ER_PARSE_ERROR = 1064;
