import { ApiClient, LoginActivityRow, startTestApp, TestApp } from '../kit';

const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

/**
 * What is the login activity listing's own: its fields, their nulls and values the upstream system
 * wrote. Paging, Link, the walk, 400s, auth and scope are the shared contract
 * (listing-contract.e2e-spec.ts).
 */
describe('GET /v1/login_activities', () => {
  let kit: TestApp;
  let api: ApiClient;
  let activities: LoginActivityRow[];

  beforeAll(async () => {
    kit = await startTestApp();
    api = await kit.client({ scopes: ['login_activities:read'] });
    const user = await kit.data.user({ email: 'ada@example.com' });
    activities = [
      await kit.data.loginActivity({
        user,
        success: true,
        authentication_method: 'oauth',
        oauth_provider: 'github',
        otp_required: true,
        session_id: 'sess_abc',
        ip_address: '2001:db8::1',
        user_agent: 'Mozilla/5.0',
        created_at: new Date('2026-11-21T09:30:00.000Z'),
      }),
      await kit.data.loginActivity({
        user,
        success: false,
        failure_reason: 'otp_invalid',
        user_agent: null,
      }),
      await kit.data.loginActivity({ user_email: 'nobody@example.com', success: false }),
    ];
  });

  afterAll(() => kit.close());

  const get = (query = '') => api.get(`/v1/login_activities${query}`);

  it('gives every field with its type, booleans as booleans, integers as numbers', async () => {
    const [success] = (await get('?limit=1').expect(200)).body.data;
    expect(success).toEqual({
      id: activities[0].id,
      user_email: 'ada@example.com',
      authentication_method: 'oauth',
      oauth_provider: 'github',
      ip_address: '2001:db8::1',
      otp_required: true,
      success: true,
      failure_reason: null,
      user_agent: 'Mozilla/5.0',
      created_at: '2026-11-21T09:30:00.000Z',
      user_id: activities[0].user_id,
      session_id: 'sess_abc',
    });
    expect(typeof success.id).toBe('number');
    expect(typeof success.user_id).toBe('number');
    expect(success.created_at).toMatch(ISO_MS);
  });

  it('keeps every field present, with null where the contract allows it', async () => {
    const { body } = await get('?limit=3').expect(200);
    const [, failed, unknown] = body.data;
    expect(Object.keys(failed).sort()).toEqual(
      [
        'authentication_method',
        'created_at',
        'failure_reason',
        'id',
        'ip_address',
        'oauth_provider',
        'otp_required',
        'session_id',
        'success',
        'user_agent',
        'user_email',
        'user_id',
      ].sort(),
    );
    expect(failed).toMatchObject({
      success: false,
      otp_required: false,
      failure_reason: 'otp_invalid',
      oauth_provider: null,
      session_id: null,
      user_agent: null,
    });
    expect(unknown).toMatchObject({
      user_email: 'nobody@example.com',
      user_id: null,
      success: false,
      failure_reason: 'unknown_user',
    });
  });

  it('passes through values the upstream system wrote that the contract does not list', async () => {
    const odd = await kit.data.loginActivity({
      authentication_method: 'webauthn_v2',
      success: false,
      failure_reason: 'geo_blocked',
    });
    const { body } = await get(`?after_id=${odd.id - 1}`).expect(200);
    expect(body.data[0]).toMatchObject({
      authentication_method: 'webauthn_v2',
      failure_reason: 'geo_blocked',
    });
    await kit.dataSource.query('DELETE FROM login_activities WHERE id = ?', [odd.id]);
  });
});
