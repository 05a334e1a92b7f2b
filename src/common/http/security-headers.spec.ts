import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import helmet, { type HelmetOptions } from 'helmet';
import { securityHeadersOf } from './security-headers';

const OPTIONS: HelmetOptions = { contentSecurityPolicy: false, crossOriginEmbedderPolicy: false };

/** The headers helmet's own middleware puts on a real reply. */
async function headersHelmetSends(options: HelmetOptions): Promise<Record<string, string>> {
  const middleware = helmet(options);
  const server: Server = createServer((request, response) =>
    middleware(request, response, () => response.end()),
  );
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const { port } = server.address() as AddressInfo;
    const reply = await fetch(`http://127.0.0.1:${port}/`);
    const bare = new Set(['connection', 'content-length', 'date', 'keep-alive']);
    return Object.fromEntries([...reply.headers].filter(([name]) => !bare.has(name)));
  } finally {
    server.close();
  }
}

describe('securityHeadersOf', () => {
  it('are exactly the headers helmet sends with the same options', async () => {
    const worked = Object.fromEntries(
      [...securityHeadersOf(OPTIONS)].map(([name, value]) => [name.toLowerCase(), value]),
    );
    expect(Object.keys(worked).length).toBeGreaterThan(5);
    expect(worked).toEqual(await headersHelmetSends(OPTIONS));
  });

  it('refuses options with a content security policy, which may differ per request', () => {
    expect(() => securityHeadersOf({ crossOriginEmbedderPolicy: false })).toThrow(
      /contentSecurityPolicy: false/,
    );
  });
});
