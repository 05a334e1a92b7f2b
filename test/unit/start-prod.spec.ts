import { spawn } from 'node:child_process';
import { mkdtempSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PROJECT_ROOT } from '../kit/processes';

/**
 * `npm run start:prod` as an operator runs it, SIGTERM sent to npm alone (as a process manager
 * stops what it started): the app must get the signal, not be left running orphaned. The project's
 * own script line and `bin/start-prod` run a stand-in for `dist/main.js` that reports the signal.
 */
describe('npm run start:prod', () => {
  const dir = mkdtempSync(join(tmpdir(), 'listing-start-prod-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('passes SIGTERM on to the app', async () => {
    const { scripts } = JSON.parse(readFileSync(join(PROJECT_ROOT, 'package.json'), 'utf8')) as {
      scripts: Record<string, string>;
    };
    writeFileSync(
      join(dir, 'package.json'),
      JSON.stringify({
        name: 'start-prod-check',
        scripts: { 'start:prod': scripts['start:prod'] },
      }),
    );
    symlinkSync(join(PROJECT_ROOT, 'bin'), join(dir, 'bin'));
    mkdirSync(join(dir, 'dist'));
    writeFileSync(
      join(dir, 'dist', 'main.js'),
      "process.on('SIGTERM', () => { console.log('app got SIGTERM'); process.exit(0); });\n" +
        "console.log('app ready'); setInterval(() => undefined, 1000);\n",
    );
    const npm = spawn('npm', ['run', '--silent', 'start:prod'], {
      cwd: dir,
      env: { ...process.env, NODE_HEAP_MAX_MB: '128' },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true, // its own process group, so that a failure can end whatever is left
    });
    let output = '';
    npm.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    npm.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    try {
      const deadline = Date.now() + 30_000;
      while (!output.includes('app ready') && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      expect(output).toContain('app ready');
      npm.kill('SIGTERM');
      // 'close': every holder of npm's pipes, the app too, has ended (an orphan would hold them).
      let timer: NodeJS.Timeout | undefined;
      const closed = new Promise((resolve) => npm.once('close', () => resolve('closed')));
      const late = new Promise((resolve) => (timer = setTimeout(resolve, 10_000, 'still open')));
      expect(await Promise.race([closed, late]).finally(() => clearTimeout(timer))).toBe('closed');
      expect(output).toContain('app got SIGTERM');
    } finally {
      try {
        process.kill(-npm.pid!, 'SIGKILL');
      } catch {
        // already gone
      }
    }
  });
  it('applies NODE_HEAP_MAX_MB written with leading zeros as the number the app reads', async () => {
    const app = join(dir, 'print-flags.js');
    writeFileSync(app, 'console.log(JSON.stringify(process.execArgv));\n');
    const output = await new Promise<string>((resolve, reject) => {
      const child = spawn(join(PROJECT_ROOT, 'bin', 'start-prod'), [app], {
        env: { ...process.env, NODE_HEAP_MAX_MB: '000256' },
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      let printed = '';
      child.stdout.on('data', (chunk: Buffer) => (printed += chunk.toString()));
      child.on('error', reject);
      child.on('close', () => resolve(printed));
    });
    expect(JSON.parse(output)).toContain('--max-old-space-size=256');
  });
});
