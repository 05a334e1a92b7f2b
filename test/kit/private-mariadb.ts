import { ChildProcess, execFile, spawn } from 'node:child_process';
import { createWriteStream, WriteStream } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { createConnection } from 'mysql2/promise';
import { freePort } from './processes';

const run = promisify(execFile);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const asRoot = () => (process.getuid?.() === 0 ? ['--user=root'] : []);

export interface PrivateMariaDbOptions {
  /** Server options beyond the basics; default `--skip-log-bin` (no binary log). */
  serverArgs?: string[];
  innodbBufferPoolMb?: number;
  /** Where the server's output goes; default a file in its own temporary folder. */
  logPath?: string;
}

/**
 * A MariaDB server of its own (own temporary data folder, free port and socket, root without a
 * password), so that a drill or a test can stop, kill or replicate it without touching the
 * shared server on 3306. `stop()`/`kill()` then `start()` bring it back on the same data.
 */
export class PrivateMariaDb {
  port = 0;
  folder = '';
  private child?: ChildProcess;
  private log?: WriteStream;
  /** Started once: its port is then the one its data (and a replica) knows. */
  private started = false;

  constructor(private readonly options: PrivateMariaDbOptions = {}) {}

  get url(): string {
    return `mysql://root@127.0.0.1:${this.port}`;
  }

  async install(): Promise<void> {
    this.folder = await mkdtemp(join(tmpdir(), 'listing-mariadb-'));
    this.port = await freePort();
    // --no-defaults: the machine's my.cnf names another user and log file.
    await run('mariadb-install-db', [
      '--no-defaults',
      `--datadir=${join(this.folder, 'data')}`,
      '--auth-root-authentication-method=normal',
      '--skip-test-db',
      // Its temporary files in its own folder: two installs side by side share nothing.
      `--tmpdir=${this.folder}`,
      ...asRoot(),
    ]);
    this.log = createWriteStream(this.options.logPath ?? join(this.folder, 'mariadbd.log'), {
      flags: 'a',
    });
  }

  /**
   * Starts the server and resolves once it answers a query. The port found free at install may be
   * taken meanwhile (by a server of a suite running beside this one): a first start moves to another.
   */
  async start(): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      const refused = await this.startOnce();
      if (!refused) return;
      if (this.started || attempt === 3) {
        throw new Error(`mariadbd exited early; see ${this.logFile}`);
      }
      this.port = await freePort();
    }
  }

  /** One start; what the server said if it exited before answering (its port taken, say). */
  private async startOnce(): Promise<string | undefined> {
    let said = '';
    const child = spawn(
      'mariadbd',
      [
        '--no-defaults',
        `--datadir=${join(this.folder, 'data')}`,
        `--port=${this.port}`,
        `--socket=${join(this.folder, 'sock')}`,
        `--pid-file=${join(this.folder, 'pid')}`,
        `--tmpdir=${this.folder}`,
        '--bind-address=127.0.0.1',
        `--innodb-buffer-pool-size=${this.options.innodbBufferPoolMb ?? 256}M`,
        '--max-connections=500',
        ...(this.options.serverArgs ?? ['--skip-log-bin']),
        ...asRoot(),
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    child.stdout?.pipe(this.log!, { end: false });
    child.stderr?.pipe(this.log!, { end: false });
    child.stderr?.on('data', (chunk: Buffer) => (said += chunk.toString()));
    this.child = child;
    const deadline = Date.now() + 60_000;
    for (;;) {
      if (child.exitCode !== null) {
        if (/Address already in use|Bind on TCP\/IP port/i.test(said)) return said;
        throw new Error(`mariadbd exited early; see ${this.logFile}`);
      }
      try {
        await this.query('SELECT 1');
        this.started = true;
        return undefined;
      } catch {
        if (Date.now() > deadline) throw new Error(`mariadbd did not start; see ${this.logFile}`);
        await sleep(100);
      }
    }
  }

  /** SIGTERM (a clean shutdown, as a service manager's restart does) and waits for the exit. */
  stop(): Promise<void> {
    return this.signal('SIGTERM');
  }

  /** SIGKILL: the server dies at once, as in a crash or an OOM kill. */
  kill(): Promise<void> {
    return this.signal('SIGKILL');
  }

  async query<T = unknown>(sql: string, values: unknown[] = []): Promise<T> {
    const connection = await createConnection({ uri: this.url, connectTimeout: 1000 });
    try {
      const [rows] = await connection.query(sql, values);
      return rows as T;
    } finally {
      await connection.end();
    }
  }

  async remove(): Promise<void> {
    await this.kill();
    this.log?.end();
    if (this.folder) await rm(this.folder, { recursive: true, force: true });
  }

  private get logFile(): string {
    return this.options.logPath ?? join(this.folder, 'mariadbd.log');
  }

  private async signal(signal: NodeJS.Signals): Promise<void> {
    const child = this.child;
    if (!child) return;
    this.child = undefined;
    const exited =
      child.exitCode !== null || child.signalCode !== null
        ? Promise.resolve()
        : new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.kill(signal);
    const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
    await exited;
    clearTimeout(timer);
  }
}

/**
 * A primary with a binary log and a replica of it, two private MariaDB servers replicating by
 * GTID, as an operator sets them up: the primary with `--log-bin --server-id=1
 * --binlog-format=ROW`, the replica with `--server-id=2`, then on the replica `CHANGE MASTER TO
 * … MASTER_USE_GTID=slave_pos; START SLAVE`. Whatever is created on the primary (databases,
 * users, rows) reaches the replica.
 */
export class ReplicatedMariaDb {
  readonly primary: PrivateMariaDb;
  readonly replica: PrivateMariaDb;

  constructor(options: { logFolder?: string; innodbBufferPoolMb?: number } = {}) {
    const logPath = (name: string) =>
      options.logFolder ? join(options.logFolder, `mariadb-${name}.log`) : undefined;
    this.primary = new PrivateMariaDb({
      serverArgs: ['--log-bin=binlog', '--server-id=1', '--binlog-format=ROW'],
      innodbBufferPoolMb: options.innodbBufferPoolMb,
      logPath: logPath('primary'),
    });
    this.replica = new PrivateMariaDb({
      serverArgs: ['--server-id=2', '--relay-log=relay'],
      innodbBufferPoolMb: options.innodbBufferPoolMb,
      logPath: logPath('replica'),
    });
  }

  /** Installs and starts both servers and sets the replica replicating. */
  async start(): Promise<void> {
    await Promise.all([this.primary.install(), this.replica.install()]);
    await Promise.all([this.primary.start(), this.replica.start()]);
    await this.replica.query(
      `CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT=${this.primary.port}, ` +
        // Reconnect to a restarted primary within a second (60 s by default).
        `MASTER_USER='root', MASTER_USE_GTID=slave_pos, MASTER_CONNECT_RETRY=1`,
    );
    await this.replica.query('START SLAVE');
  }

  /** Resolves once the replica has applied everything the primary has written so far. */
  async caughtUp(timeoutMs = 30_000): Promise<void> {
    const [{ position }] = await this.primary.query<{ position: string }[]>(
      'SELECT @@gtid_binlog_pos AS position',
    );
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const [{ applied }] = await this.replica.query<{ applied: number }[]>(
        'SELECT MASTER_GTID_WAIT(?, 1) = 0 AS applied',
        [position],
      );
      if (Number(applied) === 1) return;
      if (Date.now() > deadline) throw new Error(`the replica did not reach ${position}`);
    }
  }

  async remove(): Promise<void> {
    await Promise.all([this.replica.remove(), this.primary.remove()]);
  }
}
