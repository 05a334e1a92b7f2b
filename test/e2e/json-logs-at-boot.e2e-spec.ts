import { createServer, Server } from 'node:net';
import { eventually } from '../kit';
import {
  REFUSED_PORT,
  jsonLines,
  runTs,
  startServerProcess,
  stopServerProcess,
} from '../kit/processes';

/** In production every line the process writes is JSON, from the first one, failures included. */
describe('JSON logs from the first line (NODE_ENV=production)', () => {
  it('logs a boot with the database unreachable as JSON, then serves 503', async () => {
    const server = await startServerProcess({
      DATABASE_URL: `mysql://root@127.0.0.1:${REFUSED_PORT}/nowhere`,
    });
    try {
      const response = await fetch(`${server.baseUrl}/v1/users`);
      expect(response.status).toBe(503);
      const logged = await eventually(
        async () => jsonLines(server.output()),
        (lines) => lines.some((line) => (line.res as { status?: number })?.status === 503),
        5000,
      );
      expect(logged[0]).toMatchObject({ level: 30, context: 'NestFactory' });
      expect(logged).toContainEqual(
        expect.objectContaining({
          level: 40,
          msg: expect.stringMatching(/database not available/),
        }),
      );
      expect(logged).toContainEqual(expect.objectContaining({ res: { status: 503 } }));
    } finally {
      await stopServerProcess(server.process);
    }
    expect(server.output()).not.toContain('\u001b['); // no colour codes
    jsonLines(server.output());
  }, 90_000);

  it('logs a bad configuration as one fatal JSON line and exits 1', async () => {
    const result = await runTs('src/main.ts', [], { NODE_ENV: 'production', PORT: 'eighty' });
    expect(result.code).toBe(1);
    const lines = jsonLines(result.stdout + result.stderr);
    expect(lines).toEqual([
      expect.objectContaining({
        level: 60,
        msg: expect.stringContaining('PORT="eighty": must be an integer between 0 and 65535'),
      }),
    ]);
  }, 90_000);

  it('logs a failure to listen as JSON and exits 1', async () => {
    const taken: Server = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    try {
      const result = await runTs('src/main.ts', [], {
        NODE_ENV: 'production',
        HOST: '127.0.0.1',
        PORT: String((taken.address() as { port: number }).port),
        DATABASE_URL: `mysql://root@127.0.0.1:${REFUSED_PORT}/nowhere`,
      });
      expect(result.code).toBe(1);
      expect(result.stdout + result.stderr).not.toContain('\u001b[');
      const lines = jsonLines(result.stdout + result.stderr);
      const port = (taken.address() as { port: number }).port;
      expect(lines).toContainEqual(
        expect.objectContaining({
          level: 60,
          msg: expect.stringMatching(new RegExp(`^PORT=${port}: cannot listen there .*EADDRINUSE`)),
        }),
      );
    } finally {
      await new Promise((resolve) => taken.close(resolve));
    }
  }, 90_000);
});
