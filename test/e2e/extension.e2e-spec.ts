import { toSqlDatetime } from '../../src/database/row-values';
import { AuditEventsModule, createAuditEventsTable } from '../extension/audit-events';
import { startTestApp, TestApp } from '../kit';

/**
 * A third listing, defined only under test/extension/audit-events: a table, a definition, a DTO of
 * filters, a repository query and a thin controller. Everything else (envelope, paging headers,
 * validation, auth, scopes, errors, OpenAPI) must come from the shared pieces.
 */
describe('a listing module added from outside src (audit events)', () => {
  let kit: TestApp;
  let token: string;
  let orgA: number;

  beforeAll(async () => {
    kit = await startTestApp({ imports: [AuditEventsModule] });
    await createAuditEventsTable(kit.dataSource);
    orgA = (await kit.data.organization()).id;
    const orgB = (await kit.data.organization()).id;
    const actions = ['sign_in', 'role_changed', 'token_created', 'export'];
    for (let i = 0; i < 25; i++) {
      await kit.dataSource.query(
        'INSERT INTO audit_events (organization_id, actor_id, action, created_at) VALUES (?, ?, ?, ?)',
        [
          i % 5 === 0 ? orgB : orgA,
          i % 2 === 0 ? 7 : null,
          actions[i % 4],
          toSqlDatetime(new Date(Date.UTC(2026, 10, 1, 0, 0, i))),
        ],
      );
    }
    token = await kit.token({ scopes: ['audit_events:read'] });
  });
  afterAll(() => kit.close());

  const get = (query = '', bearer: string | null = token) => {
    const request = kit.http().get(`/v1/audit_events${query}`);
    return bearer ? request.set('Authorization', `Bearer ${bearer}`) : request;
  };

  it('answers the envelope with X-Total-Count and Link headers keeping the other params', async () => {
    const response = await get('?limit=10&action=sign_in').expect(200);
    expect(Object.keys(response.body).sort()).toEqual(['data', 'pagination']);
    expect(response.body.pagination).toEqual({ current_page: 1, limit: 10, page_count: 1 });
    expect(response.headers['x-total-count']).toBe('7');
    expect(response.body.data[0]).toEqual({
      id: 1,
      action: 'sign_in',
      actor_id: 7,
      created_at: '2026-11-01T00:00:00.000Z',
    });

    const page2 = await get('?limit=10&page=2&sort=-created_at').expect(200);
    expect(page2.headers['x-total-count']).toBe('25');
    expect(page2.headers.link).toMatch(
      new RegExp(
        [
          '</v1/audit_events\\?limit=10&page=1&sort=-created_at>; rel="first"',
          '</v1/audit_events\\?limit=10&page=1&sort=-created_at>; rel="prev"',
          '</v1/audit_events\\?limit=10&sort=-created_at&cursor=[\\w.-]+>; rel="next"',
          '</v1/audit_events\\?limit=10&page=3&sort=-created_at>; rel="last"',
        ].join(', '),
      ),
    );
    expect(page2.body.data.map((event: { id: number }) => event.id)).toEqual([
      15, 14, 13, 12, 11, 10, 9, 8, 7, 6,
    ]);
  });

  it('filters, walks by keyset and scopes to the token organization', async () => {
    const byActor = await get('?actor_id=7&created_from=2026-11-01T00:00:10Z&limit=100').expect(
      200,
    );
    expect(byActor.body.data.map((event: { id: number }) => event.id)).toEqual([
      11, 13, 15, 17, 19, 21, 23, 25,
    ]);
    const keyset = await get('?after_id=20').expect(200);
    expect(keyset.body.data.map((event: { id: number }) => event.id)).toEqual([21, 22, 23, 24, 25]);

    const scoped = await kit.token({ scopes: ['audit_events:read'], organizationId: orgA });
    const response = await get('?limit=100', scoped).expect(200);
    expect(response.headers['x-total-count']).toBe('20');
  });

  it('rejects bad parameters with a 400 naming each one', async () => {
    const response = await get('?action=delete&limit=0&sort=name&pgae=2').expect(400);
    expect(response.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(
      response.body.errors.map((error: { parameter: string }) => error.parameter).sort(),
    ).toEqual(['action', 'limit', 'pgae', 'sort']);
  });

  it('needs a token (401) with its own scope (403 insufficient_scope)', async () => {
    const missing = await get('', null).expect(401);
    expect(missing.headers['www-authenticate']).toBe('Bearer realm="api"');

    const usersOnly = await kit.token({ scopes: ['users:read'] });
    const forbidden = await get('', usersOnly).expect(403);
    expect(forbidden.headers['www-authenticate']).toBe(
      'Bearer realm="api", error="insufficient_scope", scope="audit_events:read"',
    );
    // And its scope does not open the platform's lists.
    await kit.http().get('/v1/users').set('Authorization', `Bearer ${token}`).expect(403);
  });

  it('is read-only like every listing (405 with Allow)', async () => {
    const response = await kit
      .http()
      .post('/v1/audit_events')
      .set('Authorization', `Bearer ${token}`)
      .expect(405);
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
    expect(parameters.sort).toMatchObject({ enum: ['id', '-id', 'created_at', '-created_at'] });
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
