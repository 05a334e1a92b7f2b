import { connect, Socket } from 'node:net';
import { createTestDatabase, TestDatabase } from '../kit';
import { jsonLines, runTs, startServerProcess, stopServerProcess } from '../kit/processes';

type Server = Awaited<ReturnType<typeof startServerProcess>>;

/**
 * SIGTERM to a real server process (src/main.ts, as `npm start` runs it). The in-flight request
 * is made slow honestly, by its client: it sends the headers of `GET /v1/users` announcing a
 * 2-byte JSON body and holds back the last byte, so the server has accepted the request and is
 * waiting on it (the body parser runs before routing) when the signal arrives. No test hook in
 * the app; works the same on SQLite and MySQL.
 */
describe('graceful shutdown', () => {
  let database: TestDatabase;
  let env: Record<string, string>;
  let token: string;

  beforeAll(async () => {
    database = await createTestDatabase();
    env = {
      ...database.env,
      DATABASE_URL: database.env.DATABASE_URL ?? '',
      DB_MIGRATIONS_RUN: 'true',
      SEED_DEMO_DATA: 'false',
    };
    const created = await runTs('src/cli/migrate.cli.ts', [], env);
    expect(created.code).toBe(0);
    const issued = await runTs(
      'src/cli/token.cli.ts',
      ['create', '--name', 'shutdown', '--scopes', 'users:read'],
      env,
    );
    expect(issued.code).toBe(0);
    token = issued.stdout.trim().split('\n').pop()!;
  });
  afterAll(() => database.drop());

  /** Opens a connection and sends all of the request but the body's last byte. */
  async function startSlowRequest(
    server: Server,
  ): Promise<{ socket: Socket; reply: Promise<string> }> {
    const { port } = new URL(server.baseUrl);
    const socket = connect(Number(port), '127.0.0.1');
    await new Promise<void>((resolve, reject) =>
      socket.once('connect', resolve).once('error', reject),
    );
    let received = '';
    socket.on('data', (chunk) => (received += chunk.toString()));
    const reply = new Promise<string>((resolve) => socket.once('close', () => resolve(received)));
    socket.write(
      'GET /v1/users HTTP/1.1\r\nHost: localhost\r\n' +
        `Authorization: Bearer ${token}\r\n` +
        'Content-Type: application/json\r\nContent-Length: 2\r\n\r\n{',
    );
    // Let the server read the headers and start waiting for the body.
    await new Promise((resolve) => setTimeout(resolve, 300));
    return { socket, reply };
  }

  async function refusesConnections(server: Server): Promise<boolean> {
    const deadline = Date.now() + 5000;
    while (Date.now() < deadline) {
      try {
        await fetch(`${server.baseUrl}/health/live`);
      } catch (error) {
        if ((error as { cause?: { code?: string } }).cause?.code === 'ECONNREFUSED') return true;
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    return false;
  }

  it('stops accepting, finishes the in-flight request with 200, closes the app (pool included) and exits 0', async () => {
    const server = await startServerProcess(env);
    const slow = await startSlowRequest(server);

    const exited = new Promise<number | null>((resolve) => server.process.once('exit', resolve));
    server.process.kill('SIGTERM');

    expect(await refusesConnections(server)).toBe(true);
    expect(server.process.exitCode).toBeNull(); // still draining

    slow.socket.write('}');
    const reply = await slow.reply;
    expect(reply).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
    // Answered after the signal: the token look-up and the listing still had their pool.
    expect(reply).toContain('"pagination"');
    // `reply` resolved on the socket's close: the server hung up once the reply was out.

    expect(await exited).toBe(0);
    expect(server.output()).toContain('SIGTERM received: draining');
    expect(server.output()).toContain('stopped: requests drained, database pool closed');
  });

  it('drains on Ctrl-C under npm start, whose two SIGINTs arrive together', async () => {
    const server = await startServerProcess(env);
    const slow = await startSlowRequest(server);
    const exited = new Promise<number | null>((resolve) => server.process.once('exit', resolve));
    server.process.kill('SIGINT'); // the terminal's, to the process group
    await new Promise((resolve) => setTimeout(resolve, 50));
    server.process.kill('SIGINT'); // npm's, forwarded to its child a moment later
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(server.process.exitCode).toBeNull(); // still draining
    slow.socket.write('}');
    expect(await slow.reply).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
    expect(await exited).toBe(0);
    expect(server.output()).toContain('SIGINT received: draining');
  });

  it('exits 1 when a request outlives SHUTDOWN_TIMEOUT_MS', async () => {
    const server = await startServerProcess({ ...env, SHUTDOWN_TIMEOUT_MS: '300' });
    const slow = await startSlowRequest(server);
    const code = await stopServerProcess(server.process);
    expect(code).toBe(1);
    expect(server.output()).toContain('requests still running after 300 ms');
    await slow.reply; // the server dropped the connection
    // The cut request still has its access-log line.
    expect(jsonLines(server.output())).toContainEqual(
      expect.objectContaining({
        msg: expect.stringMatching(/^GET /),
        req: expect.objectContaining({ path: '/v1/users' }),
      }),
    );
  });
  it('an export cut at SHUTDOWN_TIMEOUT_MS still has its access-log line', async () => {
    // Past its third thousand rows an export waits for the next minute's rate-limit budget: held
    // in flight at the deadline, whatever the sockets' buffers take.
    const seeded = await runTs(
      'src/cli/seed.cli.ts',
      ['--users', '5000', '--activities', '0'],
      env,
    );
    expect(seeded.code).toBe(0);
    const server = await startServerProcess({
      ...env,
      SHUTDOWN_TIMEOUT_MS: '300',
      RATE_LIMIT_PER_MINUTE: '3',
    });
    const { port } = new URL(server.baseUrl);
    const socket = connect(Number(port), '127.0.0.1');
    await new Promise<void>((resolve, reject) =>
      socket.once('connect', resolve).once('error', reject),
    );
    const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
    let received = 0;
    socket.on('data', (chunk: Buffer) => (received += chunk.length));
    socket.write(
      // Newest first: no tail to hold back (an id walk waits for settled ids after a start).
      'GET /v1/users?sort=-id HTTP/1.1\r\nHost: localhost\r\nAccept: application/x-ndjson\r\n' +
        `Authorization: Bearer ${token}\r\nX-Request-Id: cut-export\r\n\r\n`,
    );
    // Its first chunks are out: it now waits for budget.
    while (received < 100_000) await new Promise((resolve) => setTimeout(resolve, 50));
    expect(await stopServerProcess(server.process)).toBe(1);
    socket.destroy();
    await closed;
    expect(jsonLines(server.output())).toContainEqual(
      expect.objectContaining({
        msg: expect.stringMatching(/^GET /),
        req: expect.objectContaining({ id: 'cut-export' }),
      }),
    );
  });
});
