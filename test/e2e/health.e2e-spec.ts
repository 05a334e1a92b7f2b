import { eventually, startTestApp, TestApp } from '../kit';
import { REFUSED_PORT } from '../kit/processes';

describe('health probes', () => {
  let kit: TestApp;
  beforeAll(async () => (kit = await startTestApp()));
  afterAll(() => kit.close());

  it('answer without a token, outside /v1 and outside the API document', async () => {
    expect((await kit.http().get('/health/live').expect(200)).body).toMatchObject({ status: 'ok' });
    const ready = await kit.http().get('/health/ready').expect(200);
    expect(ready.body).toEqual({
      status: 'ok',
      info: { database: { status: 'up' } },
      error: {},
      details: { database: { status: 'up' } },
    });
    const openapi = await kit.http().get('/openapi.json').expect(200);
    expect(Object.keys(openapi.body.paths).some((path) => path.startsWith('/health'))).toBe(false);
  });
});

describe('readiness with REDIS_URL', () => {
  it('includes Redis when it answers', async () => {
    const kit = await startTestApp({ env: { REDIS_URL: 'redis://127.0.0.1:6379' } });
    try {
      const ready = await kit.http().get('/health/ready').expect(200);
      expect(ready.body.info).toEqual({
        database: { status: 'up' },
        redis: { status: 'up', reachable: true },
      });
    } finally {
      await kit.close();
    }
  });

  it('stays ready when nothing answers there, saying so: instances serve on local state', async () => {
    const kit = await startTestApp({ env: { REDIS_URL: `redis://127.0.0.1:${REFUSED_PORT}` } });
    try {
      const ready = await kit.http().get('/health/ready').expect(200);
      expect(ready.body.info.redis).toEqual({
        status: 'up',
        reachable: false,
        reason: 'ECONNREFUSED',
      });
      await kit.http().get('/health/live').expect(200);
    } finally {
      await kit.close();
    }
  });
});

describe('readiness after a start, with a tail hold-back', () => {
  it('waits until an id has been seen TAIL_HOLDBACK_MS ago, so that no id walk serves before', async () => {
    const kit = await startTestApp({ env: { TAIL_HOLDBACK_MS: '1500' } });
    try {
      const early = await kit.http().get('/health/ready').expect(503);
      expect(early.body.detail).toContain('tail is down (settling)');
      const later = await eventually(
        async () => (await kit.http().get('/health/ready')).status,
        (status) => status === 200,
        5_000,
        100,
      );
      expect(later).toBe(200);
      const ready = await kit.http().get('/health/ready').expect(200);
      expect(ready.body.info.tail).toEqual({ status: 'up' });
    } finally {
      await kit.close();
    }
  });
});
