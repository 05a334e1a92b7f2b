import { toSqlDatetime } from '../../src/database/row-values';
import { AUDIT_ACTIONS } from '../extension/audit-events/list-audit-events-query.dto';
import { AuditEventsModule, createAuditEventsTable } from '../extension/audit-events';
import { sortKeys } from '../../src/common/listing/listing-definition';
import { auditEventsListing } from '../extension/audit-events/audit-events.listing';
import { ApiClient, listingPlans, pageIds, startTestApp, TestApp, walkIds } from '../kit';

/**
 * A third listing, defined only under test/extension/audit-events: a table, a definition, a DTO of
 * filters, a repository query and a thin controller. Everything else (envelope, paging headers,
 * validation, auth, scopes, errors, OpenAPI) must come from the shared pieces: the shared listing
 * contract runs against it in listing-contract.e2e-spec.ts; this file covers what is its own.
 */
describe('a listing module added from outside src (audit events)', () => {
  let kit: TestApp;
  let api: ApiClient;

  beforeAll(async () => {
    kit = await startTestApp({ imports: [AuditEventsModule] });
    await createAuditEventsTable(kit.dataSource);
    const orgA = (await kit.data.organization()).id;
    const orgB = (await kit.data.organization()).id;
    const actions = ['sign_in', 'role_changed', 'token_created', 'export'];
    for (let i = 0; i < 25; i++) {
      await kit.dataSource.query(
        'INSERT INTO audit_events (organization_id, actor_id, action, `group`, created_at) VALUES (?, ?, ?, ?, ?)',
        [
          i % 5 === 0 ? orgB : orgA,
          i % 2 === 0 ? 7 : null,
          actions[i % 4],
          i % 3 === 0 ? 'security' : 'ops',
          toSqlDatetime(new Date(Date.UTC(2026, 10, 1, 0, 0, i))),
        ],
      );
    }
    api = await kit.client({ scopes: ['audit_events:read'] });
  });
  afterAll(() => kit.close());

  const get = (query = '') => api.get(`/v1/audit_events${query}`);

  it('renders its items and applies its own filters', async () => {
    const first = await get('?limit=1').expect(200);
    expect(first.body.data).toEqual([
      {
        id: 1,
        action: 'sign_in',
        group: 'security',
        actor_id: 7,
        created_at: '2026-11-01T00:00:00.000Z',
      },
    ]);
    const signIns = await get('?action=sign_in&limit=100').expect(200);
    expect(signIns.headers['x-total-count']).toBe('7');
    const byActor = await get('?actor_id=7&created_from=2026-11-01T00:00:10Z&limit=100').expect(
      200,
    );
    expect(byActor.body.data.map((event: { id: number }) => event.id)).toEqual([
      11, 13, 15, 17, 19, 21, 23, 25,
    ]);
  });

  it.each(['group', '-group'])(
    'filters and sorts by a column named with a reserved word (sort=%s), as the database orders it',
    async (sort) => {
      const direction = sort.startsWith('-') ? 'DESC' : 'ASC';
      const ordered: { id: number }[] = await kit.dataSource.query(
        `SELECT id FROM audit_events ORDER BY \`group\` ${direction}, id ${direction}`,
      );
      const security: { id: number }[] = await kit.dataSource.query(
        "SELECT id FROM audit_events WHERE `group` = 'security' ORDER BY id",
      );
      const ids = (rows: { id: number }[]) => rows.map((row) => Number(row.id));
      expect(await walkIds(api, `/v1/audit_events?sort=${sort}&limit=4`)).toEqual(ids(ordered));
      const page = await get(`?sort=${sort}&limit=5&page=3`).expect(200);
      expect(pageIds(page.body)).toEqual(ids(ordered).slice(10, 15));
      const filtered = await get('?group=security&limit=100').expect(200);
      expect(pageIds(filtered.body)).toEqual(ids(security));
    },
  );

  it('rejects a value outside its own enum with a 400 naming the parameter', async () => {
    const response = await get('?action=delete').expect(400);
    expect(response.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(response.body.errors.map((error: { parameter: string }) => error.parameter)).toEqual([
      'action',
    ]);
  });

  it('keeps its scope to itself: audit_events:read does not open the platform lists', async () => {
    await api.get('/v1/users').expect(403);
    await api.get('/v1/login_activities').expect(403);
  });

  it('is read-only like every listing (405 with Allow)', async () => {
    const response = await api.request('post', '/v1/audit_events').expect(405);
    expect(response.headers.allow).toBe('GET, HEAD');
  });

  it('appears in the served OpenAPI document with its parameters, envelope and scope', async () => {
    const { body: document } = await kit.http().get('/openapi.json').expect(200);
    const operation = document.paths['/v1/audit_events'].get;
    expect(operation['x-required-scopes']).toEqual(['audit_events:read']);
    expect(operation.security).toEqual([{ bearer: [] }]);
    const parameters = Object.fromEntries(
      operation.parameters.map((parameter: { name: string; schema: object }) => [
        parameter.name,
        parameter.schema,
      ]),
    );
    expect(Object.keys(parameters).sort()).toEqual([
      'action',
      'actor_id',
      'after_id',
      'before_id',
      'created_from',
      'created_to',
      'cursor',
      'group',
      'limit',
      'page',
      'sort',
    ]);
    expect(parameters.limit).toMatchObject({
      type: 'integer',
      minimum: 1,
      maximum: 100,
      default: 20,
    });
    expect(parameters.sort).toMatchObject({
      enum: ['id', '-id', 'created_at', '-created_at', 'group', '-group'],
    });
    expect(parameters.action).toMatchObject({
      enum: ['sign_in', 'role_changed', 'token_created', 'export'],
    });
    expect(operation.responses['200'].content['application/json'].schema).toEqual({
      $ref: '#/components/schemas/AuditEventPage',
    });
    for (const status of ['400', '401', '403', '404', '405', '406', '429', '500', '503']) {
      expect(operation.responses[status]).toHaveProperty('$ref');
    }
    expect(document.components.schemas.AuditEventView.properties.actor_id).toMatchObject({
      type: 'integer',
      nullable: true,
    });
    expect(document.components.securitySchemes.bearer.description).toContain('audit_events:read');
  });
});

describe('a listing module added from outside src: its plans (EXPLAIN)', () => {
  let kit: TestApp;
  let organizationId: number;

  beforeAll(async () => {
    kit = await startTestApp({
      imports: [AuditEventsModule],
      env: { COUNT_CACHE_WARMUP: 'false' },
    });
    await createAuditEventsTable(kit.dataSource);
    organizationId = (await kit.data.organization()).id;
    const other = (await kit.data.organization()).id;
    // Enough rows that a full scan is not the cheapest read.
    await kit.data.rows('audit_events', 3000, (n) => ({
      organization_id: n % 7 === 0 ? organizationId : other,
      actor_id: n % 50,
      action: AUDIT_ACTIONS[n % AUDIT_ACTIONS.length],
      group: n % 3 === 0 ? 'security' : 'ops',
      created_at: new Date(Date.UTC(2026, 9, 1) + n * 600_000),
    }));
  }, 60_000);
  afterAll(() => kit?.close());

  it('runs the plan the planner chose for every filter alone and in pairs, with every sort', async () => {
    const filters = {
      action: 'export',
      group: 'security',
      actor_id: '7',
      created_from: '2026-10-10T00:00:00Z',
      created_to: '2026-10-20T00:00:00Z',
    };
    const { problems, checked, kinds } = await listingPlans(kit).checkAll(
      '/v1/audit_events',
      filters,
      sortKeys(auditEventsListing),
      organizationId,
      auditEventsListing.indexes,
    );
    // Each filter alone (unscoped and scoped) and each pair, with each of the 6 sorts.
    expect(checked).toBe((1 + 5) * 2 * 6 + 10 * 6);
    expect([...kinds].sort()).toEqual(['sort', 'walk']);
    expect(problems).toEqual([]);
  }, 120_000);
});
