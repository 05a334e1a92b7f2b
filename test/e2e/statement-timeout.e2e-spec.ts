import type { AddressInfo } from 'node:net';
import { createConnection } from 'mysql2/promise';
import { Controller, Get, Injectable, Module, Query } from '@nestjs/common';
import { ApiProperty } from '@nestjs/swagger';
import { CurrentPrincipal, RequireScopes } from '../../src/common/auth/auth.decorators';
import type { Principal } from '../../src/common/auth/principal';
import { ApiListing } from '../../src/common/listing/api-listing.decorator';
import type { ListingDefinition } from '../../src/common/listing/listing-definition';
import { ListingPager } from '../../src/common/listing/listing-pager';
import { ListingQueryDto } from '../../src/common/listing/listing-query.dto';
import { ListingRepository } from '../../src/common/listing/listing.repository';
import type { Page } from '../../src/common/listing/page';
import { generateToken } from '../../src/auth/token-format';
import { startTestApp, TestApp } from '../kit';

/**
 * A listing only this test defines, over a view that is slow on purpose (on MySQL each row
 * sleeps 0.2 s), so that its COUNT outlives the statement time limit.
 */
const slowListing: ListingDefinition = {
  resource: 'slow_rows',
  table: 'slow_rows',
  organizationColumn: 'organization_id',
  sortableColumns: [],
  filters: {},
  indexes: [],
};

class SlowRowsQueryDto extends ListingQueryDto(slowListing) {}

class SlowRowView {
  @ApiProperty({ type: 'integer', format: 'int64' })
  id: number;
}

@Injectable()
class SlowRowsRepository extends ListingRepository<SlowRowView> {
  readonly definition = slowListing;

  protected readonly itemQuery = { columns: ['id'] };

  protected toItem(row: Record<string, unknown>): SlowRowView {
    return { id: Number(row.id) };
  }
}

@Controller({ path: 'slow_rows', version: '1' })
class SlowRowsController {
  constructor(
    private readonly rows: SlowRowsRepository,
    private readonly pager: ListingPager,
  ) {}

  @Get()
  @RequireScopes('login_activities:read')
  @ApiListing(SlowRowView, { summary: 'List slow rows', envelopeName: 'SlowRowPage' })
  list(
    @Query() query: SlowRowsQueryDto,
    @CurrentPrincipal() principal: Principal,
  ): Promise<Page<SlowRowView>> {
    return this.pager.paginate(this.rows, query, principal);
  }
}

@Module({ controllers: [SlowRowsController], providers: [SlowRowsRepository] })
class SlowRowsModule {}

describe('statement time limit', () => {
  let kit: TestApp;
  let token: string;

  beforeAll(async () => {
    kit = await startTestApp({
      env: { DB_STATEMENT_TIMEOUT_MS: '100', COUNT_CACHE_TTL_MS: '0' },
      imports: [SlowRowsModule],
    });
    token = await kit.token();
    // The token looked up once (cached after, whatever this reply): with a 100 ms limit on a busy
    // machine, a request's first look-up, within the limit too, can take the tests' whole budget.
    await kit.http().get('/v1/users?limit=1').set('Authorization', `Bearer ${token}`);
    await kit.data.many(3, () => kit.data.loginActivity());
    const mysql = kit.dataSource.options.type === 'mysql';
    await kit.dataSource.query(
      `CREATE VIEW slow_rows AS SELECT id, organization_id FROM login_activities
        ${mysql ? 'WHERE SLEEP(0.2) = 0' : ''}`,
    );
  });

  afterAll(() => kit.close());

  const get = (path: string) => kit.http().get(path).set('Authorization', `Bearer ${token}`);

  it('lets ordinary listings run under the limit', async () => {
    const response = await get('/v1/login_activities').expect(200);
    expect(response.headers['x-total-count']).toBe('3');
  });

  it('answers 503 problem+json with Retry-After when a query outlives the limit (MySQL)', async () => {
    const response = await get('/v1/slow_rows');
    if (kit.dataSource.options.type === 'mysql') {
      expect(response.status).toBe(503);
      expect(response.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(response.headers['retry-after']).toMatch(/^\d+$/);
      expect(response.body.status).toBe(503);
      expect(JSON.stringify(response.body)).not.toMatch(/SLEEP|max_statement_time|SELECT/i);
    } else {
      // The embedded SQLite has no statement limit (and no server a query could pin).
      expect(response.status).toBe(200);
      expect(response.headers['x-total-count']).toBe('3');
    }
  });
});

describe('statement time limit on token look-ups (MySQL/MariaDB)', () => {
  let kit: TestApp;

  beforeAll(async () => {
    kit = await startTestApp({ env: { DB_STATEMENT_TIMEOUT_MS: '1000', TOKEN_CACHE_TTL_MS: '0' } });
  });

  afterAll(() => kit.close());

  /** Another app on the kit's database, with the same 1 s limit and `env`. */
  const appBeside = (env: Record<string, string>) =>
    startTestApp({ database: kit.database, env: { DB_STATEMENT_TIMEOUT_MS: '1000', ...env } });

  /** `run` while another session locks a table: READ as a dump does, WRITE as a migration. */
  const whileLocked = async <T>(table: string, mode: 'READ' | 'WRITE', run: () => Promise<T>) => {
    const locker = await createConnection({ uri: kit.config.database.url });
    try {
      await locker.query(`LOCK TABLES ${table} ${mode}`);
      return await run();
    } finally {
      await locker.query('UNLOCK TABLES');
      await locker.end();
    }
  };

  it("answers a client's new tokens within two limits while the token table is locked", async () => {
    if (kit.dataSource.options.type !== 'mysql') return;
    const tokens = await Promise.all([1, 2, 3, 4, 5].map(() => kit.token()));
    await whileLocked('api_tokens', 'WRITE', async () => {
      const started = Date.now();
      const replies = await Promise.all(
        tokens.map((token) =>
          kit.http().get('/v1/users').set('Authorization', `Bearer ${token}`).timeout(10_000),
        ),
      );
      expect(replies.map((reply) => reply.status)).toEqual(tokens.map(() => 503));
      // The first look-up in the client's queue fails at the limit (1 s); the others then go at
      // once, not one after another (5 s).
      expect(Date.now() - started).toBeLessThan(2900);
    });
  }, 60_000);

  it('limits guesses sent at once right after the token table could not be read', async () => {
    if (kit.dataSource.options.type !== 'mysql') return;
    const app = await appBeside({ RATE_LIMIT_AUTH_FAILURES_PER_MINUTE: '5' });
    await app.app.listen(0, '127.0.0.1');
    const { port } = app.app.getHttpServer().address() as AddressInfo;
    const guess = () =>
      fetch(`http://127.0.0.1:${port}/v1/users`, {
        headers: { Authorization: `Bearer ${generateToken()}` },
      }).then((reply) => reply.status);
    try {
      expect(await whileLocked('api_tokens', 'WRITE', guess)).toBe(503);
      // Sent at once: none is checked before those ahead of it were counted.
      const statuses = await Promise.all(Array.from({ length: 100 }, guess));
      expect(statuses.filter((status) => status === 401)).toHaveLength(5);
      expect(statuses.filter((status) => status !== 401 && status !== 429)).toEqual([]);
    } finally {
      await app.close();
    }
  }, 60_000);

  it('answers a new token within the limit while the token table is locked', async () => {
    if (kit.dataSource.options.type !== 'mysql') return;
    const token = await kit.token();
    await whileLocked('api_tokens', 'WRITE', async () => {
      const started = Date.now();
      // Without a limit the look-up waits for the lock (a year by default): supertest gives up first.
      const replies = await Promise.all(
        [1, 2, 3, 4].map(() =>
          kit.http().get('/v1/users').set('Authorization', `Bearer ${token}`).timeout(5000),
        ),
      );
      expect(replies.map((reply) => reply.status)).toEqual([503, 503, 503, 503]);
      expect(replies[0].headers['retry-after']).toMatch(/^\d+$/);
      // One look-up for the four, not one after another: each a limit of 1 s.
      expect(Date.now() - started).toBeLessThan(1900);
    });
    await kit.http().get('/v1/users').set('Authorization', `Bearer ${token}`).expect(200);
  }, 60_000);

  it('answers within the limit while requests wait for a connection behind locked ones', async () => {
    if (kit.dataSource.options.type !== 'mysql') return;
    const app = await appBeside({ DB_POOL_SIZE: '1', RATE_LIMIT_PER_MINUTE: '0' });
    try {
      const token = await app.token();
      const list = () =>
        app.http().get('/v1/users').set('Authorization', `Bearer ${token}`).timeout(10_000);
      // The token and the total are cached: each request's one statement is its page's.
      await list().expect(200);
      await whileLocked('users', 'WRITE', async () => {
        const replies = await Promise.all(
          [1, 2, 3, 4, 5].map(async () => {
            const started = Date.now();
            const { status } = await list();
            return { status, ms: Date.now() - started };
          }),
        );
        expect(replies.map(({ status }) => status)).toEqual([503, 503, 503, 503, 503]);
        // Each waits a limit (1 s) at most for the one connection, then one for its statement:
        // not a limit for each request ahead of it (5 s for the last).
        expect(Math.max(...replies.map(({ ms }) => ms))).toBeLessThan(2800);
      });
      await list().expect(200);
    } finally {
      await app.close();
    }
  }, 60_000);

  it('keeps serving while writes of last use wait for a lock on the token table', async () => {
    if (kit.dataSource.options.type !== 'mysql') return;
    const app = await appBeside({ DB_POOL_SIZE: '2' });
    try {
      const tokens = await Promise.all([1, 2, 3, 4].map(() => app.token()));
      // A dump's lock: tokens are still looked up, but each first use's write of last use waits.
      await whileLocked('api_tokens', 'READ', async () => {
        for (const token of tokens) {
          await app.http().get('/v1/users').set('Authorization', `Bearer ${token}`).expect(200);
        }
        const replies = await Promise.all(
          [1, 2, 3, 4].map(() =>
            app.http().get('/v1/users').set('Authorization', `Bearer ${tokens[0]}`).timeout(5000),
          ),
        );
        expect(replies.map((reply) => reply.status)).toEqual([200, 200, 200, 200]);
      });
    } finally {
      await app.close();
    }
  }, 60_000);
});
