import {
  BeforeApplicationShutdown,
  Inject,
  Injectable,
  Logger,
  OnApplicationBootstrap,
} from '@nestjs/common';
import { DataSource } from 'typeorm';
import { APP_CONFIG, AppConfig } from '../config/app-config';
import { applyMigrations, pendingMigrations } from './apply-migrations';
import { namingSqlitePath } from './data-source-options';
import { serverTurn, type TurnOptions } from './named-lock';
import { DemoDataBootstrap } from './demo-data.bootstrap';

/** How long boot waits for the database to answer before it serves without it meanwhile. */
const BOOT_CONNECT_WAIT_MS = 2000;
/** Retries after a failed attempt: from the first delay, doubling, capped, with some jitter. */
const FIRST_RETRY_MS = 250;
const MAX_RETRY_MS = 5000;
/** How long shutdown waits for a connection attempt still running (past the stuck-connection grace). */
const ATTEMPT_SHUTDOWN_WAIT_MS = 1500;
/** A failed attempt is logged at most this often once the retries are at their cap. */
const FAILURE_LOG_EVERY_MS = 30_000;

/** Seconds a client is told to wait while the database is not connected yet. */
export const CONNECTING_RETRY_AFTER_SECONDS = String(MAX_RETRY_MS / 1000);

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A short, driver-free name for why an attempt failed: it shows in the public readiness reply. */
export function reasonOf(error: unknown): string {
  let current: unknown = error;
  for (let depth = 0; depth < 3 && current && typeof current === 'object'; depth++) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string') return code;
    current =
      (current as { driverError?: unknown; cause?: unknown }).driverError ??
      (current as { cause?: unknown }).cause;
  }
  return 'error';
}

/**
 * Brings the database up: initializes the data source (migrations included when configured),
 * then the demo data on the embedded default, and only then counts it as up.
 *
 * The embedded SQLite file is there or not: boot waits for it, and a failure ends boot. A server
 * (MySQL/MariaDB) may well start after us (a cluster restart): boot waits for it a moment only,
 * then the app listens anyway, answering 503 where the database is needed (DatabaseAvailableGuard,
 * the readiness probe), and keeps trying in the background with capped exponential backoff.
 */
@Injectable()
export class DatabaseAvailability implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger('Database');
  private up = false;
  private stopped = false;
  private failure = 'connecting';
  private attempt?: Promise<boolean>;
  private retryTimer?: NodeJS.Timeout;
  private failedAttempts = 0;
  private failureLoggedAt = 0;
  private markUp!: () => void;
  /** How boot waits for another process's migrations: within a statement's bound, said once. */
  private turn?: TurnOptions;
  private readonly upOnce = new Promise<void>((resolve) => (this.markUp = resolve));

  constructor(
    private readonly dataSource: DataSource,
    private readonly demoData: DemoDataBootstrap,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  /** Whether the database has been connected (and migrated and seeded when configured). */
  isUp(): boolean {
    return this.up;
  }

  /** Resolves once the database is up (never, if it never comes up). */
  whenUp(): Promise<void> {
    return this.upOnce;
  }

  /** Why it is not up yet: a short code (`ECONNREFUSED`, `connecting`), safe to show. */
  reason(): string {
    return this.failure;
  }

  async onApplicationBootstrap(): Promise<void> {
    if (this.config.database.kind === 'sqlite') {
      await this.connect();
      return;
    }
    const attempt = this.startAttempt();
    // Wait while the server is being reached, and for as long as migrations take once it answered.
    const started = Date.now();
    let settled = false;
    void attempt.finally(() => (settled = true));
    while (
      !settled &&
      (this.dataSource.isInitialized || Date.now() - started < BOOT_CONNECT_WAIT_MS)
    ) {
      await pause(20);
    }
    if (!settled) this.logFailure('still connecting');
  }

  async beforeApplicationShutdown(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.retryTimer);
    // Let an attempt still running end, so that the pool it may open is closed with the app's; for
    // a while only: one queued behind a statement held up never ends once its connection is dropped.
    let timer: NodeJS.Timeout | undefined;
    const waited = new Promise(
      (resolve) => (timer = setTimeout(resolve, ATTEMPT_SHUTDOWN_WAIT_MS)),
    );
    // Its timer cleared once the attempt ends: a pending one kept a test run's process alive.
    await Promise.race([this.attempt, waited]).finally(() => clearTimeout(timer));
  }

  private startAttempt(): Promise<boolean> {
    const attempt = this.connect().then(
      () => true,
      (error: unknown) => {
        this.failure = reasonOf(error);
        this.failedAttempts++;
        // Shutting down, nothing is retried: a failure then is not news.
        if (!this.stopped)
          this.logFailure(`${this.failure}: ${(error as Error)?.message ?? error}`);
        this.scheduleRetry();
        return false;
      },
    );
    this.attempt = attempt.finally(() => (this.attempt = undefined));
    return attempt;
  }

  private async connect(): Promise<void> {
    if (!this.dataSource.isInitialized) await this.initialize();
    if (this.stopped) return;
    if (this.config.database.migrationsRun) {
      this.turn ??= serverTurn(this.logger, this.config.database.statementTimeoutMs);
      await this.named(() => applyMigrations(this.dataSource, this.turn));
    }
    const pending = await pendingMigrations(this.dataSource);
    if (pending.length) {
      // Up only once the schema is this build's: every request would fail on it (a 500) before.
      throw Object.assign(
        new Error(
          `${pending.length} migration(s) not applied (${pending.join(', ')}): run ` +
            '`npm run migration:run` or set DB_MIGRATIONS_RUN=true',
        ),
        { code: 'migrations_pending' },
      );
    }
    await this.demoData.seedIfEmpty();
    if (this.config.database.kind === 'sqlite') {
      // better-sqlite3 waits for another process's write lock in the one thread every request is
      // served on: from here the service's only write (a token's last use) gives up on a locked
      // file at once. Reads in WAL mode never wait for a writer.
      await this.dataSource.query('PRAGMA busy_timeout = 0');
    }
    this.up = true;
    this.markUp();
    if (this.failedAttempts > 0) {
      this.logger.log(`database connected after ${this.failedAttempts} failed attempts`);
    }
  }

  /** Opens the database; an embedded file's failure names it. */
  private initialize(): Promise<void> {
    return this.named(async () => {
      await this.dataSource.initialize();
    });
  }

  private named<T>(work: () => Promise<T>): Promise<T> {
    return namingSqlitePath(this.config.database, work);
  }

  private scheduleRetry(): void {
    if (this.stopped) return;
    const base = Math.min(MAX_RETRY_MS, FIRST_RETRY_MS * 2 ** (this.failedAttempts - 1));
    const delay = Math.round(base * (0.8 + Math.random() * 0.4));
    this.retryTimer = setTimeout(() => void this.startAttempt(), delay);
    this.retryTimer.unref();
  }

  private logFailure(detail: string): void {
    const now = Date.now();
    if (this.failedAttempts > 1 && now - this.failureLoggedAt < FAILURE_LOG_EVERY_MS) return;
    this.failureLoggedAt = now;
    this.logger.warn(
      `database not available (${detail}); serving 503 until it answers, retrying in the background`,
    );
  }
}
