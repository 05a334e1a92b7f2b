import type { AddressInfo } from 'node:net';
import { Controller, Get, Module, Query } from '@nestjs/common';
import { createConnection, Connection } from 'mysql2/promise';
import type { AfterQueryEvent } from 'typeorm/subscriber/event/QueryEvent';
import { CurrentPrincipal, RequireScopes } from '../../src/common/auth/auth.decorators';
import type { Principal } from '../../src/common/auth/principal';
import { ListingPager } from '../../src/common/listing/listing-pager';
import { toSqlDatetime } from '../../src/database/row-values';
import {
  AUDIT_EVENTS_READ,
  AuditEventsModule,
  createAuditEventsTable,
} from '../extension/audit-events';
import { AuditEventsRepository } from '../extension/audit-events/audit-events.repository';
import { ListAuditEventsQueryDto } from '../extension/audit-events/list-audit-events-query.dto';
import { eventually, startTestApp, TestApp, testTarget } from '../kit';

/** How long the delayed listing below waits before it reads the database. */
const HANDLER_DELAY_MS = 300;

/** The audit events listing, read only after a pause: time for its client to leave first. */
@Controller({ path: 'delayed_audit_events', version: '1' })
class DelayedAuditEventsController {
  constructor(
    private readonly pager: ListingPager,
    private readonly events: AuditEventsRepository,
  ) {}

  @Get()
  @RequireScopes(AUDIT_EVENTS_READ)
  async list(@Query() query: ListAuditEventsQueryDto, @CurrentPrincipal() principal: Principal) {
    await new Promise((resolve) => setTimeout(resolve, HANDLER_DELAY_MS));
    return this.pager.paginate(this.events, query, principal);
  }
}

@Module({ controllers: [DelayedAuditEventsController], providers: [AuditEventsRepository] })
class DelayedAuditEventsModule {}

/** On both databases: a request whose client has left starts no statement from then on. */
describe('a request whose client left', () => {
  let kit: TestApp;
  let token: string;
  let baseUrl: string;
  /** The statements on audit events the database ran (TypeORM's subscribers see every one). */
  const statements: string[] = [];

  beforeAll(async () => {
    kit = await startTestApp({ imports: [AuditEventsModule, DelayedAuditEventsModule] });
    await createAuditEventsTable(kit.dataSource);
    await kit.dataSource.query(
      'INSERT INTO audit_events (organization_id, actor_id, action, created_at) VALUES (?, ?, ?, ?)',
      [null, 1, 'sign_in', toSqlDatetime(new Date(Date.UTC(2026, 10, 1)))],
    );
    token = await kit.token({ scopes: ['audit_events:read'] });
    kit.dataSource.subscribers.push({
      afterQuery: (event: AfterQueryEvent) => {
        // Not the tail watch's reads of the highest id, every second whatever the requests.
        const tailWatch = event.query.startsWith('SELECT (SELECT MAX(m.id)');
        if (event.query.includes('audit_events') && !tailWatch) statements.push(event.query);
      },
    });
    await kit.app.listen(0, '127.0.0.1');
    const { port } = kit.app.getHttpServer().address() as AddressInfo;
    baseUrl = `http://127.0.0.1:${port}`;
  });
  afterAll(() => kit.close());

  const list = (signal?: AbortSignal) =>
    fetch(`${baseUrl}/v1/delayed_audit_events`, {
      headers: { Authorization: `Bearer ${token}` },
      signal,
    });

  it('starts no statement after it left', async () => {
    // The observation works: a request that stays is read from the database.
    expect((await list()).status).toBe(200);
    expect(statements.length).toBeGreaterThan(0);
    statements.length = 0;

    const controller = new AbortController();
    const request = list(controller.signal).catch(() => 'aborted');
    setTimeout(() => controller.abort(), HANDLER_DELAY_MS / 3);
    expect(await request).toBe('aborted');
    await new Promise((resolve) => setTimeout(resolve, HANDLER_DELAY_MS * 2));
    expect(statements).toEqual([]);
  });
});

const FLOOD = 120;
const CLIENT_GIVES_UP_MS = 300;
/** About 0.3 s of one core per row read from the view (MD5 rounds). */
const BENCHMARK_ROUNDS_PER_ROW = 200_000;

/**
 * When a client leaves before its reply, its request's running statement is stopped on the server
 * (KILL QUERY) and no later statement of it starts: a flood of abandoned slow requests leaves
 * nothing running on the database a second later. The listing reads a view that computes for
 * about 0.3 s per row (materialized whole: ALGORITHM=TEMPTABLE), so every statement on it takes
 * seconds on 10 rows. (Not SLEEP(): all sleeping statements share one mutex on MariaDB, and a KILL
 * of one of many then waits up to a second for it; a statement at work stops at once.)
 */
const describeOnMysql = testTarget === 'mysql' ? describe : () => undefined;

/**
 * FLOOD keyset steps of the audit events, each with a bound of its own (no two share a count),
 * each able to be abandoned by its client.
 */
function flood(baseUrl: string, token: string) {
  return Array.from({ length: FLOOD }, (_, i) => {
    const controller = new AbortController();
    const done = fetch(`${baseUrl}/v1/audit_events?before_id=${1000 + i}&sort=-id`, {
      headers: { Authorization: `Bearer ${token}` },
      signal: controller.signal,
    }).then(
      (response) => `answered ${response.status}`,
      () => 'aborted',
    );
    return { controller, done };
  });
}

/** Every client of the flood gives up; all of them were left unanswered. When they left. */
async function abandon(clients: ReturnType<typeof flood>): Promise<number> {
  for (const client of clients) client.controller.abort();
  const left = Date.now();
  expect(await Promise.all(clients.map((client) => client.done))).toEqual(
    Array(FLOOD).fill('aborted'),
  );
  return left;
}

/**
 * The audit-events listing over HTTP with 10 rows, a token for it and a connection of its own that
 * watches the server's statements. Statements may run far longer than the tests (only stopping them
 * can end them in time); every count is made afresh.
 */
async function startAuditEventsApp() {
  const kit = await startTestApp({
    imports: [AuditEventsModule],
    env: { DB_STATEMENT_TIMEOUT_MS: '60000', COUNT_CACHE_TTL_MS: '0', RATE_LIMIT_PER_MINUTE: '0' },
  });
  await createAuditEventsTable(kit.dataSource);
  for (let i = 0; i < 10; i++) {
    await kit.dataSource.query(
      'INSERT INTO audit_events (organization_id, actor_id, action, created_at) VALUES (?, ?, ?, ?)',
      [null, i, 'sign_in', toSqlDatetime(new Date(Date.UTC(2026, 10, 1, 0, 0, i)))],
    );
  }
  const token = await kit.token({ scopes: ['audit_events:read'] });
  await kit.app.listen(0, '127.0.0.1');
  const { port } = kit.app.getHttpServer().address() as AddressInfo;
  const observer = await createConnection({ uri: kit.config.database.url });
  return { kit, token, baseUrl: `http://127.0.0.1:${port}`, observer };
}

describeOnMysql('abandoned requests (MySQL/MariaDB)', () => {
  let kit: TestApp;
  let token: string;
  let baseUrl: string;
  let observer: Connection;

  beforeAll(async () => {
    ({ kit, token, baseUrl, observer } = await startAuditEventsApp());
    await kit.dataSource.query('RENAME TABLE audit_events TO audit_events_rows');
    await kit.dataSource.query(
      `CREATE ALGORITHM=TEMPTABLE VIEW audit_events AS SELECT * FROM audit_events_rows
        WHERE BENCHMARK(${BENCHMARK_ROUNDS_PER_ROW}, MD5('a slow row')) = 0`,
    );
  }, 60_000);

  afterAll(async () => {
    await observer?.end();
    await kit?.close();
  });

  /** The app's statements on the view still running on the server. */
  const running = async (): Promise<number> => {
    const [rows] = await observer.query(
      `SELECT COUNT(*) AS n FROM information_schema.PROCESSLIST
        WHERE ID <> CONNECTION_ID() AND DB = DATABASE() AND INFO LIKE '%audit_events%'
          AND INFO NOT LIKE 'SELECT (SELECT MAX(m.id)%'`,
    );
    return Number((rows as { n: number }[])[0].n);
  };

  it('keeps a count shared by two requests going when the one that started it leaves', async () => {
    // Along the primary key: the view has no index of its own to name.
    const path = `${baseUrl}/v1/audit_events?before_id=1000&sort=-id`;
    const headers = { Authorization: `Bearer ${token}` };
    const first = new AbortController();
    const abandoned = fetch(path, { headers, signal: first.signal }).catch(() => 'aborted');
    await eventually(running, (n) => n >= 1, 5000);
    // The second request waits for the first one's count (one count per key at a time) ...
    const waiting = fetch(path, { headers });
    await new Promise((resolve) => setTimeout(resolve, 200));
    // ... and still gets its answer when the first one's client leaves.
    first.abort();
    expect(await abandoned).toBe('aborted');
    const response = await waiting;
    expect(response.status).toBe(200);
    expect(Number(response.headers.get('x-total-count'))).toBe(10);
  }, 60_000);

  it(`leaves none of ${FLOOD} abandoned requests' statements running 1 s after they left`, async () => {
    // Bounds that every row is within: no filter pushed into the view spares a row its sleep.
    const clients = flood(baseUrl, token);
    // The flood is on the database (a statement on each of several connections) ...
    const busy = await eventually(running, (n) => n >= 5, 5000);
    expect(busy).toBeGreaterThanOrEqual(5);
    await new Promise((resolve) => setTimeout(resolve, CLIENT_GIVES_UP_MS));
    // ... when every client gives up.
    await abandon(clients);

    await new Promise((resolve) => setTimeout(resolve, 1000));
    expect(await running()).toBe(0);

    // The service is unharmed: a connection that saw a KILL is not handed to the next request.
    const response = await fetch(`${baseUrl}/health/ready`);
    expect(response.status).toBe(200);
    await kit.dataSource.query('DROP VIEW audit_events');
    await kit.dataSource.query('RENAME TABLE audit_events_rows TO audit_events');
    for (let i = 0; i < 25; i++) {
      const page = await fetch(`${baseUrl}/v1/audit_events?actor_id=${(i % 10) + 1}`, {
        headers: { Authorization: `Bearer ${token}` },
      });
      expect(page.status).toBe(200);
    }
  }, 60_000);
});

/**
 * Statements that wait rather than work: the table is write-locked by another session, so every
 * statement on it waits (at no cost) until it is stopped, and only a KILL can end it in time. That
 * includes the keyset histogram the first request starts and the others then wait for.
 */
describeOnMysql('abandoned requests waiting on a lock (MySQL/MariaDB)', () => {
  let kit: TestApp;
  let token: string;
  let baseUrl: string;
  let observer: Connection;
  let locker: Connection;

  beforeAll(async () => {
    ({ kit, token, baseUrl, observer } = await startAuditEventsApp());
    locker = await createConnection({ uri: kit.config.database.url });
  }, 60_000);

  afterAll(async () => {
    await locker?.end();
    await observer?.end();
    await kit?.close();
  });

  /** The app's statements on audit events still on the server, waiting or running. */
  // Not the tail watch's reads of the highest id, which the lock holds up too.
  const running = async (): Promise<string[]> => {
    const [rows] = await observer.query(
      `SELECT INFO AS info FROM information_schema.PROCESSLIST
        WHERE ID NOT IN (CONNECTION_ID(), ?) AND DB = DATABASE() AND INFO LIKE '%audit_events%'
          AND INFO NOT LIKE 'SELECT (SELECT MAX(m.id)%'`,
      [locker.threadId],
    );
    return (rows as { info: string }[]).map((row) => row.info);
  };

  it(`leaves no statement of ${FLOOD} abandoned requests on the server 1 s after they left`, async () => {
    await locker.query('LOCK TABLES audit_events WRITE');
    const clients = flood(baseUrl, token);
    // The flood waits on the database (a statement on each of the pool's connections) ...
    const waiting = await eventually(running, (statements) => statements.length >= 5, 5000);
    expect(waiting.length).toBeGreaterThanOrEqual(5);
    await new Promise((resolve) => setTimeout(resolve, CLIENT_GIVES_UP_MS));
    // ... when every client gives up.
    const left = await abandon(clients);

    await new Promise((resolve) => setTimeout(resolve, Math.max(0, left + 1000 - Date.now())));
    const still = await running();
    await locker.query('UNLOCK TABLES');
    expect(still).toEqual([]);

    // The service is unharmed: the next requests are answered.
    for (let i = 0; i < 10; i++) {
      const page = await fetch(`${baseUrl}/v1/audit_events?before_id=${2000 + i}&sort=-id`, {
        headers: { Authorization: `Bearer ${token}` },
      });
      expect(page.status).toBe(200);
    }
  }, 60_000);
});
