import { execFile } from 'node:child_process';
import {
  cpSync,
  existsSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { DataSource } from 'typeorm';
import { createConnection } from 'mysql2/promise';
import { testTarget } from '../kit';

const run = promisify(execFile);
const ROOT = join(__dirname, '..', '..');
const GENERATOR = ['-r', '@swc-node/register', 'src/cli/generate-listing.cli.ts'];

/** The exit code, stdout and stderr of a process, whether it succeeded or not. */
async function outcome(command: string, args: string[], cwd: string, env?: Record<string, string>) {
  try {
    const { stdout, stderr } = await run(command, args, {
      cwd,
      env: { ...process.env, ...env },
      maxBuffer: 16 * 1024 * 1024,
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code?: number; stdout?: string; stderr?: string };
    return { code: failed.code ?? -1, stdout: failed.stdout ?? '', stderr: failed.stderr ?? '' };
  }
}

/**
 * `npm run generate:listing -- <name> --out <dir>` into a copy of the project (its src and test
 * kit, node_modules linked): the skeleton type-checks and passes its own e2e test, the shared
 * listing contract included, on the database this run targets.
 */
describe('the listing module generator', () => {
  let project: string;

  beforeAll(() => {
    project = mkdtempSync(join(tmpdir(), 'listing-generator-'));
    cpSync(join(ROOT, 'src'), join(project, 'src'), { recursive: true });
    cpSync(join(ROOT, 'test', 'kit'), join(project, 'test', 'kit'), { recursive: true });
    for (const file of [
      'openapi.json',
      'tsconfig.json',
      'jest.config.js',
      '.swcrc',
      '.prettierrc',
    ]) {
      cpSync(join(ROOT, file), join(project, file));
    }
    symlinkSync(join(ROOT, 'node_modules'), join(project, 'node_modules'), 'dir');
  });
  afterAll(() => rmSync(project, { recursive: true, force: true }));

  it('writes the skeleton, registers its migration and says what to do next', async () => {
    const result = await outcome(
      process.execPath,
      [...GENERATOR, 'delivery-addresses', '--out', project],
      ROOT,
    );
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    const module = join(project, 'src', 'delivery-addresses');
    for (const file of [
      'delivery-addresses.module.ts',
      'delivery-addresses.controller.ts',
      'delivery-addresses.service.ts',
      'delivery-addresses.repository.ts',
      'delivery-addresses.listing.ts',
      'delivery-address.entity.ts',
      'dto/list-delivery-addresses-query.dto.ts',
      'dto/delivery-address.view.ts',
    ]) {
      expect(existsSync(join(module, file))).toBe(true);
    }
    expect(existsSync(join(project, 'test', 'e2e', 'delivery-addresses.e2e-spec.ts'))).toBe(true);
    const index = readFileSync(join(project, 'src', 'database', 'migrations', 'index.ts'), 'utf8');
    const [migration] = /CreateDeliveryAddresses\d+/.exec(index) ?? [];
    expect(index.match(new RegExp(`\\b${migration}\\b`, 'g'))).toHaveLength(2); // import, list
    expect(index.trimEnd().endsWith(`  ${migration},\n];`)).toBe(true);

    expect(result.stdout).toContain('GET /v1/delivery_addresses, scope delivery_addresses:read');
    expect(result.stdout).toContain(
      "import { DeliveryAddressesModule } from './delivery-addresses/delivery-addresses.module';",
    );
    expect(result.stdout).toMatch(/Replace the example column `name`/);
    expect(result.stdout).toContain('npx jest test/e2e/delivery-addresses.e2e-spec.ts');
  });

  it('refuses to overwrite a module, and a name it cannot use (exit code 2)', async () => {
    const again = await outcome(
      process.execPath,
      [...GENERATOR, 'delivery-addresses', '--out', project],
      ROOT,
    );
    expect(again.code).toBe(2);
    expect(again.stderr).toContain('already there, not overwritten');
    const bad = await outcome(process.execPath, [...GENERATOR, 'Bad Name', '--out', project], ROOT);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('is not a listing name');
  });

  it("formats in this project's style into a root without its Prettier configuration", async () => {
    const bare = mkdtempSync(join(tmpdir(), 'listing-bare-'));
    try {
      const result = await outcome(
        process.execPath,
        [...GENERATOR, 'gadgets', '--out', bare],
        ROOT,
      );
      expect(result.code).toBe(0);
      const prettier = join(ROOT, 'node_modules', 'prettier', 'bin', 'prettier.cjs');
      const check = await outcome(
        process.execPath,
        [prettier, '--config', join(ROOT, '.prettierrc'), '--check', 'src', 'test'],
        bare,
      );
      expect(check.stdout + check.stderr).toContain('All matched files use Prettier code style');
    } finally {
      rmSync(bare, { recursive: true, force: true });
    }
  });

  it('makes its text columns utf8mb4_unicode_ci on MySQL whatever the database default, NOCASE on SQLite', async () => {
    const migrate = ['-r', '@swc-node/register', 'src/cli/migrate.cli.ts'];
    if (testTarget === 'mysql') {
      // A latin1 database (MariaDB's own default): a filter's `Ω` would not compare there (500).
      const url = new URL(process.env.DATABASE_URL!);
      url.pathname = `/generated_latin1_${process.pid}`;
      const admin = await createConnection({ uri: process.env.DATABASE_URL! });
      try {
        await admin.query(`CREATE DATABASE ${url.pathname.slice(1)} CHARACTER SET latin1`);
        const migrated = await outcome(process.execPath, migrate, project, {
          DATABASE_URL: url.toString(),
        });
        expect(migrated.stderr).toBe('');
        const [columns] = await admin.query(
          'SELECT CHARACTER_SET_NAME AS charset, COLLATION_NAME AS collation FROM information_schema.COLUMNS ' +
            "WHERE TABLE_SCHEMA = ? AND TABLE_NAME = 'delivery_addresses' AND COLUMN_NAME = 'name'",
          [url.pathname.slice(1)],
        );
        expect(columns).toEqual([{ charset: 'utf8mb4', collation: 'utf8mb4_unicode_ci' }]);
      } finally {
        await admin.query(`DROP DATABASE IF EXISTS ${url.pathname.slice(1)}`);
        await admin.end();
      }
    } else {
      const file = join(project, 'generated.sqlite');
      const migrated = await outcome(process.execPath, migrate, project, { SQLITE_PATH: file });
      expect(migrated.stderr).toBe('');
      const database = await new DataSource({
        type: 'better-sqlite3',
        database: file,
      }).initialize();
      try {
        const [{ sql }] = await database.query<{ sql: string }[]>(
          "SELECT sql FROM sqlite_master WHERE name = 'delivery_addresses'",
        );
        expect(sql).toMatch(/"name" varchar\(255\) COLLATE NOCASE/);
      } finally {
        await database.destroy();
      }
    }
  });

  it('type-checks with the project (tsc --noEmit)', async () => {
    // Only the generated files; tsc follows their imports into src/ and test/kit.
    writeFileSync(
      join(project, 'tsconfig.generated.json'),
      JSON.stringify({
        extends: './tsconfig.json',
        include: [
          'src/delivery-addresses/**/*.ts',
          'src/database/migrations/*.ts',
          'test/e2e/delivery-addresses.e2e-spec.ts',
        ],
      }),
    );
    const tsc = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
    const result = await outcome(
      process.execPath,
      [tsc, '--noEmit', '-p', 'tsconfig.generated.json'],
      project,
    );
    expect(result.stdout + result.stderr).toBe('');
    expect(result.code).toBe(0);
  });

  it('passes its own e2e test, the shared listing contract included', async () => {
    const jest = join(ROOT, 'node_modules', 'jest', 'bin', 'jest.js');
    const result = await outcome(
      process.execPath,
      [jest, '--ci', '--colors=false', 'test/e2e/delivery-addresses.e2e-spec.ts'],
      project,
    );
    if (result.code !== 0) throw new Error(`the generated test failed:\n${result.stderr}`);
    expect(result.stderr).toMatch(/Tests:\s+(\d+) passed, \1 total/);
    // Its plan check too: every filter alone and in pairs, with every sort, by EXPLAIN.
    expect(result.stderr).toContain('reads through the chosen index');
  });
});
