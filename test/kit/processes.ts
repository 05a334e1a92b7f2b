import { ChildProcess, execFile, spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
export const PROJECT_ROOT = join(__dirname, '..', '..');

/**
 * A port on 127.0.0.1 nothing listens on, for a dependency that is down: below the ephemeral range
 * that `listen(0)` (each supertest request) draws from, so no other worker's server can take it, as
 * one can a port `freePort` freed (Redis then met an HTTP server's reply, not ECONNREFUSED).
 */
export const REFUSED_PORT = 1;

/** A port nothing listens on right now. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

/** Runs a TypeScript entry point of src/ (as the npm scripts do) and returns its output. */
export async function runTs(
  script: string,
  args: string[],
  env: Record<string, string>,
): Promise<{ stdout: string; stderr: string; code: number }> {
  try {
    const { stdout, stderr } = await run(
      process.execPath,
      ['-r', '@swc-node/register', script, ...args],
      { cwd: PROJECT_ROOT, env: { ...process.env, ...env }, timeout: 60_000 },
    );
    return { stdout, stderr, code: 0 };
  } catch (error) {
    const failed = error as { stdout?: string; stderr?: string; code?: number };
    return { stdout: failed.stdout ?? '', stderr: failed.stderr ?? '', code: failed.code ?? 1 };
  }
}

/**
 * Starts `src/main.ts` as a real process on a port the system chooses, read from its own
 * "listening on port" line; resolves once it answers /health/live there. (A port found free
 * beforehand could be taken meanwhile by a server of a suite running beside this one, which
 * then answered for it.)
 */
export async function startServerProcess(
  env: Record<string, string>,
): Promise<{ process: ChildProcess; baseUrl: string; output: () => string }> {
  let output = '';
  const child = spawn(process.execPath, ['-r', '@swc-node/register', 'src/main.ts'], {
    cwd: PROJECT_ROOT,
    env: { ...process.env, NODE_ENV: 'production', LOG_LEVEL: 'info', ...env, PORT: '0' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`server exited early:\n${output}`);
    const port = /listening on port (\d+)/.exec(output)?.[1];
    const baseUrl = `http://127.0.0.1:${port}`;
    try {
      const response = port ? await fetch(`${baseUrl}/health/live`) : undefined;
      if (response?.ok) return { process: child, baseUrl, output: () => output };
    } catch {
      // not answering yet
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  child.kill('SIGKILL');
  throw new Error(`server did not start:\n${output}`);
}

/** Sends SIGTERM and waits for the exit code. */
export function stopServerProcess(child: ChildProcess, signal: NodeJS.Signals = 'SIGTERM') {
  return new Promise<number | null>((resolve) => {
    // Already gone: exited on its own (exitCode) or by a signal (signalCode, exitCode stays null).
    if (child.exitCode !== null || child.signalCode !== null) return resolve(child.exitCode);
    child.once('exit', (code) => resolve(code));
    child.kill(signal);
  });
}

/** Every line of output, parsed: a line that is not JSON fails the test, naming it. */
export function jsonLines(output: string): Record<string, unknown>[] {
  return output
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => {
      try {
        return JSON.parse(line) as Record<string, unknown>;
      } catch {
        throw new Error(`not a JSON log line: ${line}`);
      }
    });
}
