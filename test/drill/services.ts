import { ChildProcess, execFile, spawn } from 'node:child_process';
import { createWriteStream, mkdirSync, readFileSync, WriteStream } from 'node:fs';
import { createConnection, createServer, Server, Socket } from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { benchHeapMaxMb, buildIfStale, freePort, productionNodeFlags } from '../bench/bench-server';
import { PrivateMariaDb } from '../kit/private-mariadb';

const run = promisify(execFile);
export const ROOT = join(__dirname, '..', '..');
export { buildIfStale, freePort, PrivateMariaDb };
export { ReplicatedMariaDb } from '../kit/private-mariadb';

export const say = (message: string): void => {
  process.stdout.write(`[${new Date().toISOString().slice(11, 23)}] ${message}\n`);
};
export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Resolves with the exit of `child` (at once when it has already exited). */
function exitOf(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once('exit', () => resolve()));
}

/** The folder of this run's logs and results, under the git-ignored .bench/. */
export function resultsFolder(name: string): string {
  const stamp = new Date().toISOString().replace(/[:.]/g, '-').slice(0, 19);
  const folder = join(ROOT, '.bench', name, stamp);
  mkdirSync(folder, { recursive: true });
  return folder;
}

/** A Redis server of its own, as a child process without persistence. */
export class PrivateRedis {
  port = 0;
  private child?: ChildProcess;

  /** `args`: more of redis-server's settings, e.g. `['--databases', '4']`. */
  constructor(public args: string[] = []) {}

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  async start(): Promise<void> {
    if (!this.port) this.port = await freePort();
    const child = spawn(
      'redis-server',
      [
        ...['--port', String(this.port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
        ...this.args,
      ],
      { stdio: 'ignore' },
    );
    this.child = child;
    const deadline = Date.now() + 10_000;
    for (;;) {
      if (child.exitCode !== null) throw new Error('redis-server exited early');
      if (await this.answersPing()) return;
      if (Date.now() > deadline) throw new Error('redis-server did not start');
      await sleep(50);
    }
  }

  /** Kills the server outright (SIGKILL), as a crash would. */
  async kill(): Promise<void> {
    const child = this.child;
    if (!child) return;
    this.child = undefined;
    const exited = exitOf(child);
    child.kill('SIGKILL');
    await exited;
  }

  private answersPing(): Promise<boolean> {
    return new Promise((resolve) => {
      const socket = createConnection({ host: '127.0.0.1', port: this.port });
      socket.setTimeout(500, () => socket.destroy());
      socket.once('connect', () => socket.write('PING\r\n'));
      socket.once('data', (data) => {
        socket.destroy();
        resolve(data.toString().startsWith('+PONG'));
      });
      socket.once('error', () => resolve(false));
      socket.once('close', () => resolve(false));
    });
  }
}

/** Runs a CLI of src/cli (as its npm script does) against `databaseUrl`; returns its stdout. */
export async function runCli(script: string, args: string[], databaseUrl: string): Promise<string> {
  const { stdout } = await run(
    process.execPath,
    ['-r', '@swc-node/register', join('src', 'cli', script), ...args],
    {
      cwd: ROOT,
      env: { ...process.env, DATABASE_URL: databaseUrl, LOG_LEVEL: 'warn' },
      maxBuffer: 16 * 1024 * 1024,
    },
  );
  return stdout;
}

/** Creates a token with both listing scopes; returns the token (the CLI's last line). */
/**
 * A database of its own on the private server, migrated and seeded with the service's own CLIs;
 * with the shape of the data the load draws its parameters from.
 */
export async function seededDatabase(
  db: PrivateMariaDb,
  name: string,
  seed: { users: string; activities: string },
): Promise<{ databaseUrl: string; shape: { organizations: number; users: number } }> {
  await db.query(`CREATE DATABASE ${name} CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci`);
  const databaseUrl = `${db.url}/${name}`;
  await runCli('migrate.cli.ts', [], databaseUrl);
  say(`seeding ${seed.users} users, ${seed.activities} login activities`);
  await runCli(
    'seed.cli.ts',
    ['--users', seed.users, '--activities', seed.activities],
    databaseUrl,
  );
  const [counts] = (await db.query(
    `SELECT (SELECT COUNT(*) FROM ${name}.organizations) AS organizations, (SELECT MAX(id) FROM ${name}.users) AS users`,
  )) as { organizations: number; users: number }[];
  return {
    databaseUrl,
    shape: { organizations: Number(counts.organizations), users: Number(counts.users) },
  };
}

export async function createToken(name: string, databaseUrl: string): Promise<string> {
  const stdout = await runCli(
    'token.cli.ts',
    ['create', '--name', name, '--scopes', 'users:read,login_activities:read'],
    databaseUrl,
  );
  return stdout.trim().split('\n').at(-1)!.trim();
}

/** The built app (`node <start:prod flags> dist/main.js`) as a process of its own. */
export class AppInstance {
  readonly name: string;
  port = 0;
  exitCode: number | null = null;
  exitedAt = 0;
  private child?: ChildProcess;
  private log?: WriteStream;

  constructor(
    name: string,
    private readonly env: Record<string, string>,
    private readonly logPath: string,
    private readonly nodeArgs: string[] = [],
  ) {
    this.name = name;
  }

  get baseUrl(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  get pid(): number | undefined {
    return this.child?.pid;
  }

  async start(): Promise<void> {
    this.port = await freePort();
    this.log = createWriteStream(this.logPath, { flags: 'a' });
    const heapMaxMb = Number(this.env.NODE_HEAP_MAX_MB ?? benchHeapMaxMb());
    const child = spawn(
      process.execPath,
      [...productionNodeFlags(heapMaxMb), ...this.nodeArgs, 'dist/main.js'],
      {
        cwd: ROOT,
        env: {
          PATH: process.env.PATH,
          HOME: process.env.HOME,
          NODE_ENV: 'production',
          LOG_LEVEL: 'warn',
          LOG_PRETTY: 'false',
          HOST: '127.0.0.1',
          DB_MIGRATIONS_RUN: 'false',
          SEED_DEMO_DATA: 'false',
          NODE_HEAP_MAX_MB: String(heapMaxMb),
          ...this.env,
          PORT: String(this.port),
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    child.stdout?.pipe(this.log, { end: false });
    child.stderr?.pipe(this.log, { end: false });
    child.once('exit', (code) => {
      this.exitCode = code;
      this.exitedAt = performance.now();
    });
    this.child = child;
    const deadline = Date.now() + 60_000;
    for (;;) {
      if (child.exitCode !== null)
        throw new Error(`${this.name} exited early; see ${this.logPath}`);
      try {
        if ((await fetch(`${this.baseUrl}/health/ready`)).ok) return;
      } catch {
        // not listening yet
      }
      if (Date.now() > deadline) throw new Error(`${this.name} did not become ready`);
      await sleep(200);
    }
  }

  /** Sends `signal`; resolves with the exit code once the process has exited. */
  async signal(signal: NodeJS.Signals): Promise<number | null> {
    const child = this.child;
    if (!child) return this.exitCode;
    const exited = exitOf(child);
    child.kill(signal);
    const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
    await exited;
    clearTimeout(timer);
    this.child = undefined;
    return this.exitCode;
  }

  /** Resident memory of the process right now, in MiB (from /proc). */
  rssMiB(): number {
    const status = readFileSync(`/proc/${this.pid}/status`, 'utf8');
    const match = /VmRSS:\s+(\d+) kB/.exec(status);
    return match ? Number(match[1]) / 1024 : NaN;
  }

  /** The log lines (JSON) the process wrote at warn level or above. */
  logLines(): string[] {
    try {
      return readFileSync(this.logPath, 'utf8').split('\n').filter(Boolean);
    } catch {
      return [];
    }
  }

  async stop(): Promise<void> {
    await this.signal('SIGTERM');
    this.log?.end();
  }
}

/**
 * A small round-robin TCP load balancer: each new client connection goes to the next backend;
 * a backend that refuses the connection is skipped (as nginx's `proxy_next_upstream error`),
 * so a stopped instance only costs the connections that were open on it.
 */
export class RoundRobinProxy {
  port = 0;
  private server?: Server;
  private next = 0;
  private readonly sockets = new Set<Socket>();

  constructor(private readonly backends: () => number[]) {}

  async start(): Promise<number> {
    const server = createServer((client) => this.route(client));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve());
    });
    this.server = server;
    this.port = (server.address() as { port: number }).port;
    return this.port;
  }

  private route(client: Socket, attempt = 0): void {
    const ports = this.backends();
    if (attempt === 0) {
      client.pause();
      this.track(client);
      // Errors end in 'close', which tears the pair down.
      client.on('error', () => client.destroy());
    }
    if (attempt >= ports.length) {
      client.destroy();
      return;
    }
    const port = ports[this.next++ % ports.length];
    const upstream = createConnection({ host: '127.0.0.1', port });
    let connected = false;
    upstream.once('connect', () => {
      connected = true;
      this.track(upstream);
      upstream.on('error', () => client.destroy());
      client.on('close', () => upstream.destroy());
      upstream.on('close', () => client.destroy());
      client.pipe(upstream).pipe(client);
      client.resume();
    });
    upstream.once('error', () => {
      if (!connected) this.route(client, attempt + 1);
    });
  }

  private track(socket: Socket): void {
    if (this.sockets.has(socket)) return;
    this.sockets.add(socket);
    socket.once('close', () => this.sockets.delete(socket));
  }

  async stop(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    const server = this.server;
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}
