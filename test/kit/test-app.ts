import { DynamicModule, INestApplication, Logger } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import request from 'supertest';
import type TestAgent from 'supertest/lib/agent';
import { DataSource } from 'typeorm';
import { AppModule } from '../../src/app.module';
import { APP_OPTIONS, configureApp } from '../../src/app.setup';
import { ApiTokensRepository } from '../../src/auth/api-tokens.repository';
import { TokenIssuer } from '../../src/auth/token-issuer';
import { registeredScopeNames } from '../../src/common/auth/scope-registry';
import { AppConfig, configSchema, loadConfig } from '../../src/config/app-config';
import { buildOpenApiDocument } from '../../src/openapi/openapi-document';
import { __resetOutOfContextForTests as resetOutOfContextLogger } from 'nestjs-pino/PinoLogger';
import { contractCheckedAgent, ContractValidator } from './contract';
import { eventually } from './eventually';
import { DataFactory } from './factories';
import { LogCapture } from './log-capture';
import { createTestDatabase, TestDatabase, TestTarget } from './test-database';

export interface TestAppOptions {
  /** Extra environment variables (validated like the real ones), e.g. `{ PAGE_LIMIT_MAX: '50' }`. */
  env?: Record<string, string>;
  /** Extra modules, e.g. a listing module that only a test defines. */
  imports?: DynamicModule['imports'];
  /** Reuse a database (for two app instances on one database). */
  database?: TestDatabase;
  target?: TestTarget;
  /**
   * Keep every log line the app writes (through its real pino logger, at LOG_LEVEL `info` unless
   * `env` says otherwise) and hand them back parsed from `kit.logs()`.
   */
  captureLogs?: boolean;
}

export interface TokenOptions {
  scopes?: readonly string[];
  organizationId?: number | null;
  expiresInMs?: number | null;
  name?: string;
}

type PendingRequest = ReturnType<TestAgent['get']>;

/**
 * Requests with one token: `kit.as(token).get('/v1/users?limit=5')` sets the bearer header and,
 * like `kit.http()`, holds every reply to the contract.
 */
export interface ApiClient {
  /** The bearer token the client sends. */
  readonly token: string;
  get(path: string): PendingRequest;
  head(path: string): PendingRequest;
  /** Any other method, e.g. `request('post', '/v1/users')` for a 405. */
  request(method: string, path: string): PendingRequest;
}

export interface TestApp {
  app: INestApplication;
  config: AppConfig;
  database: TestDatabase;
  dataSource: DataSource;
  /** Rows in one line each. */
  data: DataFactory;
  /**
   * A supertest agent bound to the app. Every reply it receives is checked against the checked-in
   * openapi.json (status, headers, content type, body schema): a reply the document does not
   * describe fails the test with a ContractViolation.
   */
  http: () => TestAgent;
  /** The contract the replies are held to; `contract.assert(exchange)` for other HTTP clients. */
  contract: ContractValidator;
  /** Issues a real token (every registered scope unless told otherwise) and returns its value. */
  token: (options?: TokenOptions) => Promise<string>;
  tokenWithId: (options?: TokenOptions) => Promise<{ id: number; token: string }>;
  /**
   * Revokes a token by id, as `npm run token -- revoke` does; the app refuses it once its cached
   * look-up expires (TOKEN_CACHE_TTL_MS, 0 in the env for at once).
   */
  revoke: (tokenId: number) => Promise<void>;
  /** A client that sends `token` on every request: `kit.as(token).get(path)`. */
  as: (token: string) => ApiClient;
  /**
   * Issues a token and returns its client, in one line:
   * `const acme = await kit.client({ scopes: ['users:read'], organizationId: org.id })`.
   */
  client: (options?: TokenOptions) => Promise<ApiClient>;
  /** The log lines written so far, parsed (needs `captureLogs: true`). */
  logs: () => Record<string, unknown>[];
  /** The same lines as raw text, to show that a value (a token) appears nowhere in them. */
  logText: () => string;
  /**
   * The first log line matching `predicate`, waiting a little for it: pino-http writes a
   * request's line when the response finishes, which can be a moment after the client has it.
   */
  waitForLog: (
    predicate: (line: Record<string, unknown>) => boolean,
    timeoutMs?: number,
  ) => Promise<Record<string, unknown>>;
  /**
   * Waits for the count-cache warm-up (`COUNT_CACHE_WARMUP: 'true'`) to finish, its rollups and
   * histograms counted; fails if it has not within `timeoutMs`.
   */
  warmedUp: (timeoutMs?: number) => Promise<void>;
  /**
   * Waits for readiness (`/health/ready` 200): after a start with a `TAIL_HOLDBACK_MS`, until the
   * newest ids have settled, before which an id walk answers 503 on MySQL/MariaDB.
   */
  ready: (timeoutMs?: number) => Promise<void>;
  /** Closes the app, then drops its database (unless it was handed in). */
  close: () => Promise<void>;
}

/**
 * Boots the real app (same module, same setup as `main.ts`) on a throw-away database, migrated
 * through the real migrations. One line in a `beforeAll`:
 *
 *   const kit = await startTestApp();
 */
export async function startTestApp(options: TestAppOptions = {}): Promise<TestApp> {
  // A misspelt name would boot with that variable's default, and the case would test nothing.
  const unknown = Object.keys(options.env ?? {}).filter((name) => !(name in configSchema.shape));
  if (unknown.length) {
    throw new Error(`startTestApp: env has no variable ${unknown.join(', ')} (see the README)`);
  }
  if (options.database) return bootOn(options.database, false, options);
  const database = await createTestDatabase(options.target);
  try {
    return await bootOn(database, true, options);
  } catch (error) {
    await database.drop();
    throw error;
  }
}

async function bootOn(
  database: TestDatabase,
  ownDatabase: boolean,
  options: TestAppOptions,
): Promise<TestApp> {
  const captured = options.captureLogs ? new LogCapture() : undefined;
  const config = loadConfig({
    NODE_ENV: 'test',
    LOG_LEVEL: captured ? 'info' : 'silent',
    SEED_DEMO_DATA: 'false',
    DB_MIGRATIONS_RUN: 'true',
    // Its counts at boot would mingle with what a test watches; listing-warmup's spec turns it on.
    COUNT_CACHE_WARMUP: 'false',
    // Rows are listed as soon as they are written; a case about tail polling sets the hold-back.
    TAIL_HOLDBACK_MS: '0',
    ...database.env,
    ...options.env,
  });
  // nestjs-pino keeps the logger for lines written outside a request in a process-wide variable,
  // set by the first app only; without this reset a second app in the same test file would write
  // those lines with the first app's level and destination.
  resetOutOfContextLogger();
  // Nest's static Logger still points at the previous app's pino logger, which the reset above
  // emptied; silence it until this app's `useLogger` takes over.
  Logger.overrideLogger(false);
  const moduleRef = await Test.createTestingModule({
    imports: [
      AppModule.forRoot(config, options.imports, { logDestination: captured?.destination }),
    ],
  }).compile();
  const app = moduleRef.createNestApplication(APP_OPTIONS);
  try {
    configureApp(app, config);
    await app.init();
  } catch (error) {
    await app.close().catch(() => undefined);
    throw error;
  }

  const dataSource = app.get(DataSource);
  const issuer = new TokenIssuer(new ApiTokensRepository(dataSource));
  const tokenWithId = async (tokenOptions: TokenOptions = {}) => {
    const issued = await issuer.issue({
      name: tokenOptions.name ?? 'test',
      scopes: tokenOptions.scopes ?? registeredScopeNames(),
      organizationId: tokenOptions.organizationId ?? null,
      expiresInMs: tokenOptions.expiresInMs ?? null,
    });
    return { id: issued.id, token: issued.token };
  };
  const server = app.getHttpServer();
  // Modules only a test registers are not in the checked-in file: their routes are held to the
  // app's own document instead (the core routes always to the checked-in file).
  const contract = options.imports?.length
    ? ContractValidator.checkedIn().extendedWith(buildOpenApiDocument(app, config.pagination))
    : ContractValidator.checkedIn();
  const http = () => contractCheckedAgent(request(server), contract);
  const as = (token: string): ApiClient => {
    const send = (method: string, path: string): PendingRequest => {
      const agent = http() as unknown as Record<string, (url: string) => PendingRequest>;
      return agent[method.toLowerCase()](path).set('Authorization', `Bearer ${token}`);
    };
    return {
      token,
      get: (path) => send('get', path),
      head: (path) => send('head', path),
      request: send,
    };
  };
  return {
    app,
    config,
    database,
    dataSource,
    data: new DataFactory(dataSource),
    http,
    contract,
    token: async (tokenOptions) => (await tokenWithId(tokenOptions)).token,
    tokenWithId,
    revoke: async (tokenId) => {
      if (!(await issuer.revoke(tokenId))) throw new Error(`no active token has the id ${tokenId}`);
    },
    as,
    client: async (tokenOptions) => as((await tokenWithId(tokenOptions)).token),
    logs: () => {
      if (!captured) throw new Error('start the app with { captureLogs: true } to read its logs');
      return captured.lines();
    },
    logText: () => {
      if (!captured) throw new Error('start the app with { captureLogs: true } to read its logs');
      return captured.text();
    },
    waitForLog: async (predicate, timeoutMs = 2000) => {
      if (!captured) throw new Error('start the app with { captureLogs: true } to read its logs');
      return captured.waitFor(predicate, timeoutMs);
    },
    warmedUp: async (timeoutMs = 30_000) => {
      const pending = /^listing_warmup_pending 0$/m;
      const metrics = await eventually(
        async () => (await http().get('/metrics').expect(200)).text,
        (text) => pending.test(text),
        timeoutMs,
      );
      if (!pending.test(metrics)) throw new Error(`the warm-up did not end in ${timeoutMs} ms`);
    },
    ready: async (timeoutMs = 10_000) => {
      const ready = async () => (await http().get('/health/ready')).status === 200;
      if (!(await eventually(ready, Boolean, timeoutMs, 100))) {
        throw new Error(`the app was not ready in ${timeoutMs} ms`);
      }
    },
    close: async () => {
      await app.close();
      if (ownDatabase) await database.drop();
    },
  };
}

/**
 * The app booted on a database that `seed` filled through another app first, once its warm-up
 * (COUNT_CACHE_WARMUP) has counted those rows: a restart on a database with rows, in one line.
 * Closing it closes both.
 */
export async function startWarmedTestApp(
  seed: (seeding: TestApp) => Promise<unknown>,
  options: TestAppOptions = {},
): Promise<TestApp> {
  const seeding = await startTestApp({ target: options.target });
  let app: TestApp | undefined;
  try {
    await seed(seeding);
    app = await startTestApp({
      ...options,
      database: seeding.database,
      env: { COUNT_CACHE_WARMUP: 'true', COUNT_CACHE_TTL_MS: '60000', ...options.env },
    });
    await app.warmedUp();
  } catch (error) {
    await app?.close();
    await seeding.close();
    throw error;
  }
  const warmed = app;
  return {
    ...warmed,
    close: async () => {
      await warmed.close();
      await seeding.close();
    },
  };
}
