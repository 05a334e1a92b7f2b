import { isIP } from 'node:net';
import { z } from 'zod';

/** The highest PAGE_LIMIT_MAX may be. */
export const PAGE_LIMIT_CEILING = 10_000;

const booleanFromEnv = z
  .enum(['true', 'false', '1', '0'], { message: 'must be true or false' })
  .transform((value) => value === 'true' || value === '1');

const integer = (min: number, max = Number.MAX_SAFE_INTEGER) => {
  const message = `must be an integer between ${min} and ${max}`;
  // Digits alone are an integer: no `.int()`, which added zod's own message to a bad value's.
  return z
    .string()
    .regex(/^\d+$/, { message })
    .transform(Number)
    .pipe(z.number().min(min, { message }).max(max, { message }));
};

/** Whether each part decodes: the drivers' decodeURIComponent throws on a stray `%`. */
const decodes = (...parts: string[]) => {
  try {
    parts.forEach((part) => decodeURIComponent(part));
    return true;
  } catch {
    return false;
  }
};

/**
 * A URL the drivers can open: WHATWG's parser takes it (a port in range, a host), of one of
 * `protocols`, its parts decode, and with `database` a path naming it and a host that is not an
 * IPv6 literal (TypeORM splits `[::1]:3306` at its first colon).
 */
const serverUrl = (protocols: string[], message: string, database = false) =>
  z.string().refine((value) => {
    const url = URL.parse(value);
    return (
      !!url &&
      !/\s/.test(value) &&
      protocols.includes(url.protocol) &&
      url.hostname !== '' &&
      decodes(url.username, url.password, url.pathname) &&
      (!database || (url.pathname.length > 1 && !url.hostname.startsWith('[') && onlyTlsQuery(url)))
    );
  }, message);

/** An address or subnet (`10.0.0.0/8`), or a name Express knows for a set of them. */
const proxyAddress = (entry: string): boolean => {
  if (['loopback', 'linklocal', 'uniquelocal'].includes(entry)) return true;
  const [address, bits, ...rest] = entry.split('/');
  const family = isIP(address);
  if (!family || rest.length) return false;
  return bits === undefined || (/^\d+$/.test(bits) && Number(bits) <= (family === 4 ? 32 : 128));
};

/**
 * Which hops' `X-Forwarded-For` entries are believed: off (`false`), the nearest N proxies
 * (`true` is 1: trusting every hop would let a client name its own address), or the proxies at
 * these addresses.
 */
const trustProxy = z.string().transform((value, context): false | number | string[] => {
  if (value === 'false' || value === '0') return false;
  if (value === 'true') return 1;
  if (/^\d+$/.test(value) && Number(value) <= 10) return Number(value);
  const entries = value.split(',').map((entry) => entry.trim());
  if (entries.every(proxyAddress)) return entries;
  context.addIssue({
    code: 'custom',
    message:
      'must be false, true (one proxy), a number of proxies up to 10, or a comma-separated ' +
      'list of proxy addresses or subnets (loopback, linklocal, uniquelocal, 10.0.0.0/8)',
  });
  return z.NEVER;
});

/** A comma-separated list, its items trimmed, empty ones left out. */
const splitList = (value: string | undefined): string[] =>
  (value ?? '')
    .split(',')
    .map((item) => item.trim())
    .filter(Boolean);

/** Browser origins: `scheme://host[:port]`, nothing after it (an origin never has a path). */
const corsOrigins = z
  .string()
  .transform(splitList)
  .refine(
    (origins) =>
      origins.every((origin) => {
        const url = URL.parse(origin);
        return !!url && ['http:', 'https:'].includes(url.protocol) && url.origin === origin;
      }),
    'must be a comma-separated list of origins such as https://app.example.com (no path, no trailing slash, no *)',
  );

/** A database URL's query holds `ssl=true` or `ssl=false` at most: nothing else is read. */
const onlyTlsQuery = ({ searchParams }: URL): boolean =>
  [...searchParams].every(([key, value]) => key === 'ssl' && ['true', 'false'].includes(value));

const DATABASE_URL_FORM =
  'must be a mysql:// URL with a host and a database, and no query but ssl=true or ssl=false, e.g. ' +
  'mysql://user:pass@db:3306/listing';

const databaseUrl = serverUrl(['mysql:', 'mariadb:'], DATABASE_URL_FORM, true);

/** NODE_HEAP_MAX_MB where bin/start-prod finds no container memory limit (it says the same). */
export const DEFAULT_HEAP_MAX_MB = 128;

/**
 * Every environment variable the service reads. `.env.example` and the README's configuration
 * table document the same list (a unit test keeps the three in step).
 */
export const configSchema = z.object({
  NODE_ENV: z.enum(['development', 'production', 'test']).default('development'),
  PORT: integer(0, 65535).default(3000),
  HOST: z.string().min(1).default('0.0.0.0'),
  DATABASE_URL: databaseUrl.optional(),
  DATABASE_REPLICA_URLS: z.string().optional(),
  REPLICA_MAX_LAG_MS: integer(1000, 3_600_000).default(5000),
  SQLITE_PATH: z.string().min(1).default('data/listing.sqlite'),
  DB_POOL_SIZE: integer(1, 500).default(10),
  DB_STATEMENT_TIMEOUT_MS: integer(0, 600_000).default(5000),
  DB_PREPARED_STATEMENTS: integer(0, 1000).default(64),
  DB_MIGRATIONS_RUN: booleanFromEnv.optional(),
  SEED_DEMO_DATA: booleanFromEnv.optional(),
  PAGE_LIMIT_DEFAULT: integer(1, 10_000).default(20),
  PAGE_LIMIT_MAX: integer(1, PAGE_LIMIT_CEILING).default(100),
  COUNT_CACHE_TTL_MS: integer(0, 3_600_000).default(10_000),
  COUNT_CACHE_RECOUNT_TIMEOUT_MS: integer(100, 600_000).default(20_000),
  COUNT_CACHE_FULL_RECOUNT_MS: integer(0, 86_400_000).default(600_000),
  COUNT_CACHE_WARMUP: booleanFromEnv.default(true),
  TOKEN_CACHE_TTL_MS: integer(0, 60_000).default(5000),
  CURSOR_SECRET: z.string().min(16, { message: 'must be at least 16 characters' }).optional(),
  TAIL_HOLDBACK_MS: integer(0, 600_000).default(5000),
  DEEP_PAGE_ROWS: integer(1, 1_000_000_000).default(100_000),
  EXPORT_ROWS_PER_REQUEST: integer(1, 1_000_000).default(1000),
  RATE_LIMIT_PER_MINUTE: integer(0, 1_000_000).default(600),
  RATE_LIMIT_AUTH_FAILURES_PER_MINUTE: integer(1, 1_000_000).default(60),
  REDIS_URL: serverUrl(
    ['redis:', 'rediss:'],
    'must be a redis:// URL with a host, e.g. redis://cache:6379',
  )
    // ioredis would SELECT NaN for `/x` and fail after boot, an uncaught error.
    // A database number SELECT takes (a 32-bit integer); Redis answers a larger one otherwise
    // than "DB index is out of range", and ioredis would go on, on database 0.
    .refine((value) => {
      const path = URL.parse(value)?.pathname ?? '';
      return /^\/?\d*$/.test(path) && Number(path.slice(1) || 0) <= 2_147_483_647;
    }, 'must be a redis:// URL whose path, if any, is a database number, e.g. redis://cache:6379/0')
    .optional(),
  REDIS_KEY_PREFIX: z.string().min(1).max(100).default('listing:'),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  LOG_PRETTY: booleanFromEnv.optional(),
  METRICS_ENABLED: booleanFromEnv.default(true),
  METRICS_TOKEN: z.string().min(16, { message: 'must be at least 16 characters' }).optional(),
  CORS_ORIGINS: corsOrigins.optional(),
  TRUST_PROXY: trustProxy.default(false),
  SHUTDOWN_TIMEOUT_MS: integer(0, 600_000).default(10_000),
  // Unset, bin/start-prod derives it (128, or three quarters of a container's memory limit).
  NODE_HEAP_MAX_MB: integer(64, 65_536).optional(),
});

export type RawConfig = z.infer<typeof configSchema>;

export interface AppConfig {
  env: RawConfig['NODE_ENV'];
  port: number;
  host: string;
  database: {
    /** `mysql` when DATABASE_URL is set, else the embedded SQLite file. */
    kind: 'mysql' | 'sqlite';
    url?: string;
    replicaUrls: string[];
    /**
     * A replica further behind the primary than this (or not replicating, or down) is taken out of
     * the read rotation until it is healthy again; with none left, reads go to the primary.
     */
    replicaMaxLagMs: number;
    sqlitePath: string;
    poolSize: number;
    statementTimeoutMs: number;
    /**
     * Listing statements each MySQL connection keeps prepared (least recently used closed first);
     * 0 sends them as text.
     */
    preparedStatements: number;
    migrationsRun: boolean;
    seedDemoData: boolean;
  };
  pagination: { defaultLimit: number; maxLimit: number };
  countCacheTtlMs: number;
  /**
   * Time limit of a total's recount in the background (no request waits for it), and so how long
   * past its time a total may still be served while that recount runs.
   */
  countCacheRecountTimeoutMs: number;
  /**
   * How often a cached total is counted in full, in the background (to take in deleted rows);
   * in between it is advanced by counting only the rows appended since (ids above its maximum).
   */
  countCacheFullRecountMs: number;
  /**
   * Count, once the database is up, the totals and histograms of every listing unfiltered and
   * filtered by each value of its few-valued filters, one after another in the background.
   */
  countCacheWarmup: boolean;
  tokenCacheTtlMs: number;
  /** Signs `cursor` values; without it a key derived from the database's address is used. */
  cursorSecret: string;
  /**
   * Rows created less than this long ago are held back from walks in ascending id order, so a
   * row whose id was assigned before a newer row's but committed after it is not skipped.
   */
  tailHoldbackMs: number;
  /** Pages this many rows from both ends are positioned by a histogram, not walked. */
  deepPageRows: number;
  /** An NDJSON export spends one request of rate-limit budget per this many rows sent. */
  exportRowsPerRequest: number;
  rateLimit: {
    /** Requests a minute per token (per client IP without a well-formed token); 0 = off. */
    perMinute: number;
    /** Rejected well-formed tokens a minute per client IP before it is refused outright. */
    authFailuresPerMinute: number;
  };
  redisUrl?: string;
  /** Prepended to every Redis key, so that several deployments (or test runs) can share one Redis. */
  redisKeyPrefix: string;
  log: { level: RawConfig['LOG_LEVEL']; pretty: boolean };
  metrics: { enabled: boolean; token?: string };
  corsOrigins: string[];
  /** Express's `trust proxy`: off, a number of hops, or the proxies' addresses. */
  trustProxy: false | number | string[];
  shutdownTimeoutMs: number;
  /** V8's old-space bound bin/start-prod applied (`--max-old-space-size`), in MiB. */
  heapMaxMb: number;
}

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}

/** Variables whose value may hold a password or a token: a bad one is named, never echoed. */
const SECRET_VARIABLES = new Set([
  'CURSOR_SECRET',
  'DATABASE_URL',
  'DATABASE_REPLICA_URLS',
  'REDIS_URL',
  'METRICS_TOKEN',
]);

const shown = (key: string, value: unknown): string =>
  SECRET_VARIABLES.has(key) ? key : `${key}=${JSON.stringify(value ?? '')}`;

/** Reads and validates the environment once; throws ConfigError naming every bad variable. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): AppConfig {
  const present = Object.fromEntries(
    Object.keys(configSchema.shape)
      .filter((key) => env[key] !== undefined && env[key] !== '')
      .map((key) => [key, env[key]]),
  );
  const parsed = configSchema.safeParse(present);
  if (!parsed.success) {
    throw new ConfigError(
      parsed.error.issues.map((issue) => {
        const key = issue.path.join('.');
        return `${shown(key, present[key])}: ${issue.message}`;
      }),
    );
  }
  const raw = parsed.data;
  const problems: string[] = [];
  const replicaUrls = splitList(raw.DATABASE_REPLICA_URLS);
  replicaUrls.forEach((url, index) => {
    if (!databaseUrl.safeParse(url).success) {
      problems.push(`DATABASE_REPLICA_URLS: entry ${index + 1} ${DATABASE_URL_FORM}`);
    }
  });
  if (replicaUrls.length > 0 && !raw.DATABASE_URL) {
    problems.push('DATABASE_REPLICA_URLS: needs DATABASE_URL (the primary) to be set');
  }
  if (raw.PAGE_LIMIT_DEFAULT > raw.PAGE_LIMIT_MAX) {
    problems.push(
      `PAGE_LIMIT_DEFAULT=${raw.PAGE_LIMIT_DEFAULT}: must not exceed PAGE_LIMIT_MAX (${raw.PAGE_LIMIT_MAX})`,
    );
  }
  if (problems.length) throw new ConfigError(problems);

  const kind = raw.DATABASE_URL ? 'mysql' : 'sqlite';
  return {
    env: raw.NODE_ENV,
    port: raw.PORT,
    host: raw.HOST,
    database: {
      kind,
      url: raw.DATABASE_URL,
      replicaUrls,
      replicaMaxLagMs: raw.REPLICA_MAX_LAG_MS,
      sqlitePath: raw.SQLITE_PATH,
      poolSize: raw.DB_POOL_SIZE,
      statementTimeoutMs: raw.DB_STATEMENT_TIMEOUT_MS,
      preparedStatements: raw.DB_PREPARED_STATEMENTS,
      // The embedded default migrates itself so that `npm start` works on a fresh clone;
      // a MySQL deployment runs `npm run migration:run` as its own step unless told otherwise.
      migrationsRun: raw.DB_MIGRATIONS_RUN ?? kind === 'sqlite',
      seedDemoData: raw.SEED_DEMO_DATA ?? kind === 'sqlite',
    },
    pagination: { defaultLimit: raw.PAGE_LIMIT_DEFAULT, maxLimit: raw.PAGE_LIMIT_MAX },
    countCacheTtlMs: raw.COUNT_CACHE_TTL_MS,
    countCacheRecountTimeoutMs: raw.COUNT_CACHE_RECOUNT_TIMEOUT_MS,
    countCacheFullRecountMs: raw.COUNT_CACHE_FULL_RECOUNT_MS,
    countCacheWarmup: raw.COUNT_CACHE_WARMUP,
    tokenCacheTtlMs: raw.TOKEN_CACHE_TTL_MS,
    cursorSecret: raw.CURSOR_SECRET ?? defaultCursorSecret(raw.DATABASE_URL ?? raw.SQLITE_PATH),
    tailHoldbackMs: raw.TAIL_HOLDBACK_MS,
    deepPageRows: raw.DEEP_PAGE_ROWS,
    exportRowsPerRequest: raw.EXPORT_ROWS_PER_REQUEST,
    rateLimit: {
      perMinute: raw.RATE_LIMIT_PER_MINUTE,
      authFailuresPerMinute: raw.RATE_LIMIT_AUTH_FAILURES_PER_MINUTE,
    },
    redisUrl: raw.REDIS_URL,
    redisKeyPrefix: raw.REDIS_KEY_PREFIX,
    log: { level: raw.LOG_LEVEL, pretty: raw.LOG_PRETTY ?? raw.NODE_ENV === 'development' },
    metrics: { enabled: raw.METRICS_ENABLED, token: raw.METRICS_TOKEN },
    corsOrigins: raw.CORS_ORIGINS ?? [],
    trustProxy: raw.TRUST_PROXY,
    shutdownTimeoutMs: raw.SHUTDOWN_TIMEOUT_MS,
    heapMaxMb: raw.NODE_HEAP_MAX_MB ?? DEFAULT_HEAP_MAX_MB,
  };
}

/**
 * Without CURSOR_SECRET, cursors are signed with a key every instance on the same database shares:
 * its address without credentials, so that a cursor is never a test of the database's password.
 */
function defaultCursorSecret(database: string): string {
  const url = URL.parse(database);
  if (url) [url.username, url.password] = ['', ''];
  return `listing-cursor:${url?.toString() ?? database}`;
}

export const APP_CONFIG = Symbol('APP_CONFIG');
