import { type ClientRequest, request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { InFlightRequests } from '../../src/common/http/in-flight-requests';
import { LoginActivitiesRepository } from '../../src/login-activities/login-activities.repository';
import { asExport, startTestApp, TestApp, UserRow } from '../kit';

const NDJSON = 'application/x-ndjson';

/** More rows than one export chunk (1,000), so that an export spans several statements. */
async function insertActivities(kit: TestApp, users: UserRow[]): Promise<void> {
  const values = Array.from({ length: 2100 }, (_, i) => {
    const user = users[i % users.length];
    const ms = String(i % 1000).padStart(3, '0');
    return `('${user.email}', 'password', NULL, '192.0.2.1', 0, ${i % 3 ? 1 : 0}, ${
      i % 3 ? 'NULL' : "'invalid_credentials'"
    }, 'jest', '2026-06-01 00:00:${String(i % 60).padStart(2, '0')}.${ms}', ${user.id}, NULL, ${user.organization_id})`;
  });
  await kit.dataSource.query(
    `INSERT INTO login_activities (user_email, authentication_method, oauth_provider, ip_address,
      otp_required, success, failure_reason, user_agent, created_at, user_id, session_id,
      organization_id) VALUES ${values.join(', ')}`,
  );
}

/** NDJSON export of the listings, and what it spends of the rate limit. */
describe('NDJSON export (Accept: application/x-ndjson)', () => {
  let kit: TestApp;
  let token: string;
  let scopedToken: string;
  let users: UserRow[];

  beforeAll(async () => {
    kit = await startTestApp({
      // A budget no export here reaches, but the one that paces (its own app).
      env: {
        EXPORT_ROWS_PER_REQUEST: '10',
        RATE_LIMIT_PER_MINUTE: '100000',
        TAIL_HOLDBACK_MS: '0',
      },
    });
    token = await kit.token();
    const organization = await kit.data.organization();
    scopedToken = await kit.token({ organizationId: organization.id });
    users = await kit.data.many(12, (i) =>
      kit.data.user({ organization_id: i % 2 === 0 ? organization.id : undefined }),
    );
    await insertActivities(kit, users);
  });

  afterAll(() => kit.close());

  const get = (path: string, bearer = token) =>
    kit.http().get(path).set('Authorization', `Bearer ${bearer}`);

  const lines = (text: string) =>
    text
      .split('\n')
      .filter((line) => line !== '')
      .map((line) => JSON.parse(line) as { id: number });

  async function pages(path: string, bearer = token) {
    const items: unknown[] = [];
    for (let page = 1; ; page++) {
      const response = await get(`${path}&limit=100&page=${page}`, bearer).expect(200);
      items.push(...response.body.data);
      if (page >= response.body.pagination.page_count) return items;
    }
  }

  it.each([
    '/v1/login_activities?sort=id',
    '/v1/login_activities?sort=-created_at&success=false',
    '/v1/users?sort=name',
    '/v1/users?sort=-updated_at',
  ])('streams every row of %s, each line equal to the list item', async (path) => {
    const response = await asExport(get(path));
    expect(response.status).toBe(200);
    expect(response.headers['content-type']).toBe(`${NDJSON}; charset=utf-8`);
    expect(response.headers['cache-control']).toBe('private, no-store');
    expect(lines(response.body as string)).toEqual(await pages(path));
  });

  it('exports only what an organization-scoped token may see', async () => {
    const path = '/v1/login_activities?sort=id';
    const response = await asExport(get(path, scopedToken));
    const exported = lines(response.body as string);
    expect(exported).toEqual(await pages(path, scopedToken));
    expect(exported.length).toBe(1050);
  });

  it('caps the rows with limit and refuses page', async () => {
    const capped = await asExport(get('/v1/login_activities?limit=7&sort=-id'));
    expect(lines(capped.body as string).map((item) => item.id)).toEqual(
      (await get('/v1/login_activities?limit=7&sort=-id').expect(200)).body.data.map(
        (item: { id: number }) => item.id,
      ),
    );
    const refused = await get('/v1/login_activities?page=2').set('Accept', NDJSON).expect(400);
    expect(refused.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(refused.body.errors[0].parameter).toBe('page');
  });

  it('checks the token before negotiating the format, and answers 406 for a format it has not', async () => {
    const anonymous = await kit.http().get('/v1/users').set('Accept', 'text/csv').expect(401);
    expect(anonymous.headers['content-type']).toMatch(/^application\/problem\+json/);
    const csv = await get('/v1/users').set('Accept', 'text/csv').expect(406);
    expect(csv.body.status).toBe(406);
  });

  it('spends one request of budget per EXPORT_ROWS_PER_REQUEST rows sent', async () => {
    const budgetToken = await kit.token();
    const remaining = async () => {
      const response = await get('/v1/users?limit=1', budgetToken).expect(200);
      return Number(/r=(\d+)/.exec(String(response.headers.ratelimit))![1]);
    };
    const before = await remaining();
    await get('/v1/login_activities?limit=35', budgetToken).set('Accept', NDJSON).expect(200);
    // The export itself (1), its 35 rows (3 more at 10 a request), and the request that reads it.
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(await remaining()).toBe(before - 1 - 1 - 3);
  });

  it('paces exports that spend their budget to the next window, parallel ones together, and lets shutdown go once their clients leave', async () => {
    // 150 requests a minute, one per 10 rows: one chunk of 1,000 rows (100) fits, a second does not.
    const paced = await startTestApp({
      env: { EXPORT_ROWS_PER_REQUEST: '10', RATE_LIMIT_PER_MINUTE: '150', TAIL_HOLDBACK_MS: '0' },
    });
    let exports: {
      request: ClientRequest;
      state: { status: number; received: string; complete: boolean };
    }[] = [];
    try {
      await insertActivities(paced, await paced.data.many(4, () => paced.data.user()));
      const bearer = await paced.token();
      const server = paced.app.getHttpServer();
      await new Promise<void>((resolve) => server.listen(0, resolve));
      const { port } = server.address() as AddressInfo;
      exports = Array.from({ length: 3 }, () => {
        const state = { status: 0, received: '', complete: false };
        const request = httpRequest(
          {
            port,
            path: '/v1/login_activities?sort=id',
            headers: { Authorization: `Bearer ${bearer}`, Accept: NDJSON },
          },
          (response) => {
            state.status = response.statusCode ?? 0;
            response.setEncoding('utf8');
            response.on('data', (chunk: string) => (state.received += chunk));
            response.on('end', () => (state.complete = response.complete));
          },
        );
        request.on('error', () => undefined);
        request.end();
        return { request, state };
      });
      await new Promise((resolve) => setTimeout(resolve, 2000));
      // One chunk went out in all (each export has 2,100 rows): the first export's, then its next
      // waits for the next window, and so does the token (the others started after: 429).
      const streaming = exports.filter(({ state }) => state.status === 200);
      const sent = streaming.map(({ state }) => lines(state.received).length);
      expect(sent.reduce((sum, n) => sum + n, 0)).toBe(1000);
      expect(streaming.some(({ state }) => state.complete)).toBe(false);
      expect(exports.every(({ state }) => [200, 429].includes(state.status))).toBe(true);
      const refused = await paced
        .http()
        .get('/v1/users')
        .set('Authorization', `Bearer ${bearer}`)
        .expect(429);
      expect(Number(refused.headers['retry-after'])).toBeGreaterThan(50);
      // The clients leave: their replies end, and nothing holds a shutdown any more.
      for (const { request } of exports) request.destroy();
      const idle = paced.app.get(InFlightRequests).idle();
      const waited = await Promise.race([
        idle.then(() => 'idle'),
        new Promise((resolve) => setTimeout(() => resolve('still running'), 2000)),
      ]);
      expect(waited).toBe('idle');
    } finally {
      for (const { request } of exports) request.destroy();
      await paced.close();
    }
  });

  it('ends a stream that fails midway without its final chunk, so the client sees a truncated transfer', async () => {
    const server = kit.app.getHttpServer();
    if (!server.listening) await new Promise<void>((resolve) => server.listen(0, resolve));
    const { port } = server.address() as AddressInfo;
    // A fault, not a stand-in: the first chunk is read from the database, the second fails.
    const repository = kit.app.get(LoginActivitiesRepository);
    const original = repository.findForward.bind(repository);
    const findForward = jest
      .spyOn(repository, 'findForward')
      .mockImplementationOnce(original)
      .mockImplementationOnce(async () => {
        throw new Error('connection lost');
      });
    const outcome = await new Promise<{ complete: boolean; lines: number }>((resolve) => {
      const request = httpRequest(
        {
          port,
          path: '/v1/login_activities?sort=id',
          headers: { Authorization: `Bearer ${token}`, Accept: NDJSON },
        },
        (response) => {
          let text = '';
          const done = () =>
            resolve({ complete: response.complete, lines: text.split('\n').length - 1 });
          response.setEncoding('utf8');
          response.on('data', (chunk: string) => (text += chunk));
          response.on('end', done);
          response.on('error', done);
          response.on('aborted', done);
        },
      );
      request.on('error', () => resolve({ complete: false, lines: -1 }));
      request.end();
    });
    findForward.mockRestore();
    expect(outcome.complete).toBe(false);
    expect(outcome.lines).toBe(1000);
  });

  it('stops reading the database when the client leaves', async () => {
    const server = kit.app.getHttpServer();
    if (!server.listening) await new Promise<void>((resolve) => server.listen(0, resolve));
    const { port } = server.address() as AddressInfo;
    const repository = kit.app.get(LoginActivitiesRepository);
    const findForward = jest.spyOn(repository, 'findForward');
    // 64 chunks' worth of rows: more than the sockets' buffers hold.
    for (let i = 0; i < 5; i++) {
      await kit.dataSource.query(
        `INSERT INTO login_activities (user_email, authentication_method, ip_address, otp_required,
          success, user_agent, created_at, user_id, organization_id)
         SELECT user_email, authentication_method, ip_address, otp_required, success, user_agent,
          created_at, user_id, organization_id FROM login_activities`,
      );
    }
    await new Promise<void>((resolve) => {
      const request = httpRequest(
        {
          port,
          path: '/v1/login_activities?sort=id',
          headers: { Authorization: `Bearer ${token}`, Accept: NDJSON },
        },
        (response) => {
          // The client takes the first bytes, stops reading, and leaves.
          response.once('data', () => {
            response.pause();
            setTimeout(() => {
              request.destroy();
              resolve();
            }, 300);
          });
        },
      );
      request.on('error', () => undefined);
      request.end();
    });
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const reads = findForward.mock.calls.length;
    await new Promise((resolve) => setTimeout(resolve, 500));
    const later = findForward.mock.calls.length;
    findForward.mockRestore();
    // No chunk was read after the first second, and far fewer than the 67 of a whole export.
    expect(later).toBe(reads);
    expect(reads).toBeLessThan(40);
  });
});
