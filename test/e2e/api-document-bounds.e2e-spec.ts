import { startTestApp, TestApp } from '../kit';

type Parameter = { name: string; in: string; schema: Record<string, unknown> };
type Document = {
  info: { description: string };
  paths: Record<string, { get: { parameters: Parameter[] } }>;
};

const parameter = (document: Document, path: string, name: string) =>
  document.paths[path].get.parameters.find((p) => p.in === 'query' && p.name === name)!;

describe('/openapi.json follows the configuration (PAGE_LIMIT_MAX=250, PAGE_LIMIT_DEFAULT=50)', () => {
  let kit: TestApp;
  let token: string;
  beforeAll(async () => {
    kit = await startTestApp({ env: { PAGE_LIMIT_MAX: '250', PAGE_LIMIT_DEFAULT: '50' } });
    token = await kit.token();
  });
  afterAll(() => kit.close());

  it('documents the limit the service enforces, on every listing', async () => {
    const { body } = await kit.http().get('/openapi.json').expect(200);
    const document = body as Document;
    for (const path of ['/v1/users', '/v1/login_activities']) {
      expect(parameter(document, path, 'limit').schema).toMatchObject({
        minimum: 1,
        maximum: 250,
        default: 50,
      });
    }
    expect(document.info.description).toContain('`limit` is 1..250 (default 50)');

    const ok = await kit
      .http()
      .get('/v1/users?limit=250')
      .set('Authorization', `Bearer ${token}`)
      .expect(200);
    expect(ok.body.pagination.limit).toBe(250);
    const refused = await kit
      .http()
      .get('/v1/users?limit=251')
      .set('Authorization', `Bearer ${token}`)
      .expect(400);
    expect(refused.body.errors).toEqual([
      { parameter: 'limit', message: 'must be an integer between 1 and 250' },
    ]);
  });

  it('documents the date-only form of the time bounds that the service accepts', async () => {
    const { body } = await kit.http().get('/openapi.json').expect(200);
    const schema = parameter(body as Document, '/v1/login_activities', 'created_from').schema;
    expect(schema.format).toBeUndefined();
    expect(schema.anyOf).toEqual([
      { type: 'string', format: 'date-time' },
      { type: 'string', format: 'date' },
    ]);
    await kit
      .http()
      .get('/v1/login_activities?created_from=2026-11-21&sort=created_at')
      .set('Authorization', `Bearer ${token}`)
      .expect(200);
  });
});
