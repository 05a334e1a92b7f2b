import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { jsonLines, PROJECT_ROOT, runTs, stopServerProcess } from '../kit/processes';

/** A file of text in a folder of its own (made once). */
let text: string | undefined;
const textFile = () => {
  if (!text) {
    text = join(mkdtempSync(join(tmpdir(), 'not-a-database-')), 'notes.txt');
    writeFileSync(text, 'not a database\n'.repeat(100));
  }
  return text;
};

/** The real entry point refuses a bad environment before it touches anything. */
describe('configuration at boot', () => {
  it('exits non-zero with a message naming each bad variable', async () => {
    const result = await runTs('src/main.ts', [], {
      PORT: 'eighty',
      METRICS_ENABLED: 'maybe',
      METRICS_TOKEN: 'short-secret',
    });
    expect(result.code).toBe(1);
    // One fatal log line (JSON outside development), its message naming each bad variable.
    const [line] = result.stdout.trim().split('\n');
    const { msg } = JSON.parse(line) as { msg: string };
    expect(msg).toContain('Invalid configuration:');
    expect(msg).toContain('PORT="eighty": must be an integer between 0 and 65535');
    expect(msg).toContain('METRICS_ENABLED="maybe": must be true or false');
    expect(msg).toContain('METRICS_TOKEN: must be at least 16 characters');
    expect(result.stderr + result.stdout).not.toContain('short-secret');
    expect(result.stdout).not.toContain('listening');
  });

  it('says why it stops even with LOG_LEVEL=silent', async () => {
    const result = await runTs('src/main.ts', [], { LOG_LEVEL: 'silent', PORT: 'eighty' });
    expect(result.code).toBe(1);
    const fatal = jsonLines(result.stdout).find((line) => line.level === 60);
    expect(fatal?.msg).toContain('PORT="eighty": must be an integer between 0 and 65535');
  });

  it.each([
    [
      'a host that does not resolve',
      { HOST: 'no-such-host.invalid' },
      'HOST="no-such-host.invalid"',
    ],
    ['a host that is not this machine', { HOST: '192.0.2.1' }, 'HOST="192.0.2.1"'],
  ])('exits non-zero naming HOST for %s, without a stack', async (_label, env, named) => {
    const result = await runTs('src/main.ts', [], {
      ...env,
      DATABASE_URL: '',
      SQLITE_PATH: ':memory:',
      PORT: '0',
    });
    expect(result.code).toBe(1);
    const fatal = jsonLines(result.stdout).find((line) => line.level === 60);
    expect(fatal?.msg).toContain(`${named}: cannot listen there`);
    expect(fatal?.err).toBeUndefined();
    expect(result.stdout).not.toContain('listening on port');
    // `:memory:` is SQLite's database in memory, not a file of that name in the working directory.
    expect(existsSync(join(PROJECT_ROOT, ':memory:'))).toBe(false);
  });

  it('names the migrations a fresh file has not run with DB_MIGRATIONS_RUN=false, without a stack', async () => {
    const result = await runTs('src/main.ts', [], {
      DATABASE_URL: '',
      SQLITE_PATH: join(mkdtempSync(join(tmpdir(), 'unmigrated-')), 'listing.sqlite'),
      DB_MIGRATIONS_RUN: 'false',
      PORT: '0',
    });
    expect(result.code).toBe(1);
    const fatal = jsonLines(result.stdout).find((line) => line.level === 60);
    expect(fatal?.msg).toMatch(
      /^boot failed: \d+ migration\(s\) not applied .*npm run migration:run/,
    );
    expect(fatal?.err).toBeUndefined();
  });

  it.each([
    ['a folder', () => tmpdir(), 'cannot use it as the database (unable to open database file)'],
    ['a file that is not a database', () => textFile(), 'file is not a database'],
    ['a path under a file', () => join(textFile(), 'x.sqlite'), 'no folder for it'],
  ])('names SQLITE_PATH for %s, and no variable of listening', async (_label, path, cause) => {
    const result = await runTs('src/main.ts', [], {
      DATABASE_URL: '',
      SQLITE_PATH: path(),
      PORT: '0',
    });
    expect(result.code).toBe(1);
    const fatal = jsonLines(result.stdout).find((line) => line.level === 60);
    // The cause named in the message, without a stack (the operator's to put right).
    expect(fatal?.err).toBeUndefined();
    const message = String(fatal?.msg);
    expect(message).toContain(`boot failed: SQLITE_PATH=${JSON.stringify(path())}: `);
    expect(message).toContain(cause);
    expect(result.stdout).not.toMatch(/"PORT|HOST=/);
  });

  it.each([
    ['token.cli.ts', ['list']],
    ['seed.cli.ts', ['--users', '1', '--activities', '1']],
    ['migrate.cli.ts', []],
  ])('names SQLITE_PATH in the CLIs too: %s', async (cli, args) => {
    const path = textFile();
    const result = await runTs(`src/cli/${cli}`, args, { DATABASE_URL: '', SQLITE_PATH: path });
    expect(result.code).toBe(1);
    expect(result.stderr.trim()).toBe(
      `error: SQLITE_PATH=${JSON.stringify(path)}: cannot use it as the database (file is not a database)`,
    );
  });

  it('logs the port it bound with PORT=0, where the system chose it', async () => {
    const child = spawn(process.execPath, ['-r', '@swc-node/register', 'src/main.ts'], {
      cwd: PROJECT_ROOT,
      env: {
        ...process.env,
        NODE_ENV: 'production',
        DATABASE_URL: '',
        SQLITE_PATH: ':memory:',
        PORT: '0',
      },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    try {
      let output = '';
      let listening: RegExpExecArray | null = null;
      while (!listening && child.exitCode === null) {
        const [chunk] = (await once(child.stdout!, 'data')) as [Buffer];
        output += chunk.toString();
        listening = /listening on port (\d+)/.exec(output);
      }
      const port = Number(listening?.[1]);
      expect(port).toBeGreaterThan(0);
      expect((await fetch(`http://127.0.0.1:${port}/health/live`)).status).toBe(200);
    } finally {
      await stopServerProcess(child);
    }
  });
});
