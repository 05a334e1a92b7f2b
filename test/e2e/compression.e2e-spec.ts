import { request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { startTestApp, TestApp } from '../kit';

/** A GET with a raw client, which leaves the body as it came (supertest decodes gzip itself). */
function rawGet(
  port: number,
  path: string,
  headers: Record<string, string>,
): Promise<{ status: number; headers: Record<string, unknown>; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, path, headers }, (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () =>
        resolve({
          status: response.statusCode!,
          headers: response.headers,
          body: Buffer.concat(chunks),
        }),
      );
      response.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

describe('compression of replies', () => {
  let kit: TestApp;
  let token: string;
  let port: number;
  const path = '/v1/users?limit=30';
  beforeAll(async () => {
    kit = await startTestApp();
    const organization = await kit.data.organization();
    for (let i = 0; i < 30; i++) {
      await kit.data.user({ organization_id: organization.id, name: `Compressible user ${i}` });
    }
    token = await kit.token();
    await kit.app.listen(0, '127.0.0.1');
    port = (kit.app.getHttpServer().address() as AddressInfo).port;
  });
  afterAll(() => kit.close());

  const plain = () =>
    rawGet(port, path, { Authorization: `Bearer ${token}`, 'Accept-Encoding': 'identity' });

  it('sends a list reply gzip-encoded when asked, and it decodes to the same JSON', async () => {
    const expected = JSON.parse((await plain()).body.toString('utf8'));
    expect(expected.data).toHaveLength(30);
    const reply = await kit
      .http()
      .get(path)
      .set('Authorization', `Bearer ${token}`)
      .set('Accept-Encoding', 'gzip')
      .expect(200);
    expect(reply.headers['content-encoding']).toBe('gzip');
    expect(reply.headers['vary']).toMatch(/Accept-Encoding/i);
    expect(reply.body).toEqual(expected);
  });

  it('sends it br-encoded when asked, and it decodes to the same JSON', async () => {
    const identity = await plain();
    expect(identity.headers['content-encoding']).toBeUndefined();
    const reply = await rawGet(port, path, {
      Authorization: `Bearer ${token}`,
      'Accept-Encoding': 'br',
    });
    expect(reply.status).toBe(200);
    expect(reply.headers['content-encoding']).toBe('br');
    expect(reply.body.length).toBeLessThan(identity.body.length);
    expect(JSON.parse(brotliDecompressSync(reply.body).toString('utf8'))).toEqual(
      JSON.parse(identity.body.toString('utf8')),
    );
  });

  it('leaves small replies alone', async () => {
    const reply = await rawGet(port, '/health/live', { 'Accept-Encoding': 'gzip, br' });
    expect(reply.status).toBe(200);
    expect(reply.headers['content-encoding']).toBeUndefined();
  });

  it('compresses an NDJSON export in both encodings, each decoding to the same lines', async () => {
    const ndjson = { Authorization: `Bearer ${token}`, Accept: 'application/x-ndjson' };
    const identity = await rawGet(port, path, { ...ndjson, 'Accept-Encoding': 'identity' });
    expect(identity.headers['content-encoding']).toBeUndefined();
    expect(identity.body.toString('utf8').trim().split('\n')).toHaveLength(30);
    for (const [encoding, decode] of [
      ['gzip', gunzipSync],
      ['br', brotliDecompressSync],
    ] as const) {
      const reply = await rawGet(port, path, { ...ndjson, 'Accept-Encoding': encoding });
      expect(reply.headers['content-encoding']).toBe(encoding);
      expect(reply.headers['content-type']).toBe('application/x-ndjson; charset=utf-8');
      expect(decode(reply.body).toString('utf8')).toBe(identity.body.toString('utf8'));
    }
  });

  it('keeps the ETag across encodings, so a 304 answers whichever encoding the client takes', async () => {
    const auth = { Authorization: `Bearer ${token}` };
    const gzip = await rawGet(port, path, { ...auth, 'Accept-Encoding': 'gzip' });
    const br = await rawGet(port, path, { ...auth, 'Accept-Encoding': 'br' });
    const identity = await rawGet(port, path, { ...auth, 'Accept-Encoding': 'identity' });
    // Weak: the same representation whatever its content coding (RFC 9110 §8.8.3).
    expect(gzip.headers.etag).toMatch(/^W\//);
    expect(br.headers.etag).toBe(gzip.headers.etag);
    expect(identity.headers.etag).toBe(gzip.headers.etag);
    const notModified = await rawGet(port, path, {
      ...auth,
      'Accept-Encoding': 'br',
      'If-None-Match': String(gzip.headers.etag),
    });
    expect(notModified.status).toBe(304);
  });
});
