import type { DataSource, EntityManager, QueryRunner } from 'typeorm';
import { oneAtATime, type TurnOptions } from '../named-lock';
import { toSqlDatetime } from '../row-values';
import { SeededRandom } from './random';

const FIRST_NAMES = [
  'Ada',
  'Alan',
  'Grace',
  'Linus',
  'Margaret',
  'Dennis',
  'Barbara',
  'Ken',
  'Frances',
  'Edsger',
  'Radia',
  'Tim',
  'Hedy',
  'John',
  'Karen',
  'Donald',
  'Shafi',
  'Leslie',
  'Sophie',
  'Guido',
  'Yukihiro',
  'Anita',
  'Bjarne',
  'Joan',
  'Niklaus',
  'Carol',
  'Whitfield',
  'Mary',
  'Jean',
  'Ivan',
  'Amélie',
  'Zoë',
  'José',
  'Søren',
  'Łukasz',
  'Nguyễn',
  'Aiko',
  'Priya',
  'Chidi',
  'Fatima',
];
const LAST_NAMES = [
  'Lovelace',
  'Turing',
  'Hopper',
  'Torvalds',
  'Hamilton',
  'Ritchie',
  'Liskov',
  'Thompson',
  'Allen',
  'Dijkstra',
  'Perlman',
  'Berners-Lee',
  'Lamarr',
  'McCarthy',
  'Jones',
  'Knuth',
  'Goldwasser',
  'Lamport',
  'Wilson',
  'van Rossum',
  'Matsumoto',
  'Borg',
  'Stroustrup',
  'Clarke',
  'Wirth',
  'Shaw',
  'Diffie',
  'Keller',
  'Bartik',
  'Sutherland',
  "O'Brien",
  'Müller',
  'García',
  'Kowalski',
  'Tanaka',
  'Okafor',
  'Haddad',
  'Iyer',
  'Andersen',
  'Rossi',
];
const COMPANY_WORDS = [
  'Acme',
  'Globex',
  'Initech',
  'Umbrella',
  'Hooli',
  'Stark',
  'Wayne',
  'Tyrell',
  'Cyberdyne',
  'Soylent',
  'Vandelay',
  'Wonka',
  'Oscorp',
  'Aperture',
  'Massive',
  'Dynamic',
  'Blue',
  'North',
];
const COMPANY_SUFFIXES = ['Corp', 'Industries', 'Labs', 'Systems', 'GmbH', 'Ltd', 'Group', 'Inc'];
export const ROLE_NAMES = ['owner', 'admin', 'member', 'viewer', 'auditor'];
const USER_AGENTS = [
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/142.0 Safari/537.36',
  'Mozilla/5.0 (Macintosh; Intel Mac OS X 14_6) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Safari/605.1.15',
  'Mozilla/5.0 (X11; Linux x86_64; rv:144.0) Gecko/20100101 Firefox/144.0',
  'Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 Mobile/15E148',
  'Mozilla/5.0 (Linux; Android 15; Pixel 9) AppleWebKit/537.36 Chrome/142.0 Mobile Safari/537.36',
  'okhttp/4.12.0',
  'python-requests/2.32.3',
  'curl/8.11.0',
];
const METHODS = [
  ['password', 55],
  ['oauth', 25],
  ['saml', 10],
  ['magic_link', 5],
  ['passkey', 5],
] as const;
const OAUTH_PROVIDERS = ['google', 'microsoft', 'github', 'okta', 'apple'] as const;
const FAILURES: Record<string, readonly (readonly [string, number])[]> = {
  password: [
    ['invalid_credentials', 60],
    ['account_locked', 8],
    ['account_disabled', 5],
    ['otp_invalid', 12],
    ['otp_expired', 5],
    ['password_expired', 10],
  ],
  oauth: [
    ['oauth_denied', 70],
    ['account_disabled', 15],
    ['account_locked', 15],
  ],
  saml: [
    ['invalid_credentials', 50],
    ['account_disabled', 50],
  ],
  magic_link: [
    ['otp_expired', 70],
    ['account_locked', 30],
  ],
  passkey: [
    ['invalid_credentials', 80],
    ['account_disabled', 20],
  ],
};

export interface SeedOptions {
  users: number;
  activities: number;
  /** Organizations to spread the users over; derived from `users` when absent. */
  organizations?: number;
  seed?: number;
  batchSize?: number;
  /** Activities happen within this many days before `now`. */
  activityDays?: number;
  now?: Date;
  onProgress?: (message: string) => void;
  /** How long to wait for another process's seed, and who hears of it. */
  turn?: TurnOptions;
  /** Seeds only a database without users, as told once its turn has come (instances at once). */
  onlyIfEmpty?: boolean;
}

export interface SeedResult {
  organizations: number;
  users: number;
  activities: number;
  /** Nothing was written: `onlyIfEmpty`, and the database had users. */
  skipped?: boolean;
}

const DAY_MS = 86_400_000;

/**
 * Fills the database with realistic, deterministic demo data: users across organizations and
 * roles, and login activity with failures and their reasons, OAuth providers, attempts with
 * unknown e-mails (no user), and sessions on success. Appends to what is there.
 */
export async function seedDemoData(
  dataSource: DataSource,
  options: SeedOptions,
): Promise<SeedResult> {
  const random = new SeededRandom(options.seed ?? 20261122);
  const batchSize = options.batchSize ?? 1000;
  const now = options.now ?? new Date();
  const progress = options.onProgress ?? (() => undefined);
  // No users, no organizations for them: unknown users' activities name none.
  const organizationCount =
    options.organizations ??
    (options.users === 0 ? 0 : Math.max(3, Math.min(2000, Math.ceil(options.users / 250))));

  // Seeds beside each other would add the same roles and take the same ids. On SQLite the turn
  // is already the transaction that holds the write lock.
  const inTransaction = <T>(runner: QueryRunner, work: (manager: EntityManager) => Promise<T>) =>
    dataSource.options.type === 'mysql' ? runner.manager.transaction(work) : work(runner.manager);
  return oneAtATime(
    dataSource,
    'seed',
    (runner) =>
      inTransaction(runner, async (manager) => {
        if (options.onlyIfEmpty && (await maxId(manager, 'users')) > 0) {
          return { organizations: 0, users: 0, activities: 0, skipped: true };
        }
        const roleIds = await ensureRoles(manager);
        const firstOrganizationId = (await maxId(manager, 'organizations')) + 1;
        const domains: string[] = [];
        const organizationRows: unknown[][] = [];
        for (let i = 0; i < organizationCount; i++) {
          const id = firstOrganizationId + i;
          const name = `${random.pick(COMPANY_WORDS)} ${random.pick(COMPANY_SUFFIXES)} ${id}`;
          domains.push(`${name.toLowerCase().replace(/[^a-z0-9]+/g, '-')}.example`);
          organizationRows.push([
            id,
            name,
            toSqlDatetime(new Date(now.getTime() - random.int(400, 1500) * DAY_MS)),
          ]);
        }
        await insertRows(
          manager,
          'organizations',
          ['id', 'name', 'created_at'],
          organizationRows,
          batchSize,
        );
        progress(`organizations: ${organizationCount}`);

        const firstUserId = (await maxId(manager, 'users')) + 1;
        const userEmails: string[] = [];
        const userOrganizations: number[] = [];
        let userRows: unknown[][] = [];
        for (let i = 0; i < options.users; i++) {
          const id = firstUserId + i;
          const organizationIndex = random.int(0, organizationCount - 1);
          const first = random.pick(FIRST_NAMES);
          const last = random.pick(LAST_NAMES);
          const local = `${first}.${last}`
            .normalize('NFD')
            .replace(/[^\x20-\x7e]/g, '')
            .toLowerCase()
            .replace(/[^a-z0-9.]+/g, '');
          const email = `${local}.${id}@${domains[organizationIndex]}`;
          const created = now.getTime() - random.int(1, 730) * DAY_MS - random.int(0, DAY_MS);
          const updated = Math.min(now.getTime(), created + random.int(0, 200) * DAY_MS);
          userEmails.push(email);
          userOrganizations.push(firstOrganizationId + organizationIndex);
          userRows.push([
            id,
            `${first} ${last}`,
            email,
            random.weighted(roleIds.map((roleId, index) => [roleId, index < 2 ? 1 : 6] as const)),
            firstOrganizationId + organizationIndex,
            toSqlDatetime(new Date(created)),
            toSqlDatetime(new Date(updated)),
          ]);
          if (userRows.length === batchSize) {
            await insertRows(manager, 'users', USER_COLUMNS, userRows, batchSize);
            userRows = [];
          }
        }
        await insertRows(manager, 'users', USER_COLUMNS, userRows, batchSize);
        progress(`users: ${options.users}`);

        const spanMs = (options.activityDays ?? 90) * DAY_MS;
        const start = now.getTime() - spanMs;
        let activityRows: unknown[][] = [];
        for (let i = 0; i < options.activities; i++) {
          // Ascending in time as ids grow, as an append-only log is.
          const at =
            start + Math.floor(((i + random.next()) / Math.max(1, options.activities)) * spanMs);
          activityRows.push(activityRow(random, at, firstUserId, userEmails, userOrganizations));
          if (activityRows.length === batchSize) {
            await insertRows(
              manager,
              'login_activities',
              ACTIVITY_COLUMNS,
              activityRows,
              batchSize,
            );
            activityRows = [];
            if ((i + 1) % (batchSize * 100) === 0) progress(`activities: ${i + 1}`);
          }
        }
        await insertRows(manager, 'login_activities', ACTIVITY_COLUMNS, activityRows, batchSize);
        progress(`activities: ${options.activities}`);
        return {
          organizations: organizationCount,
          users: options.users,
          activities: options.activities,
        };
      }),
    options.turn,
  );
}

const USER_COLUMNS = [
  'id',
  'name',
  'email',
  'role_id',
  'organization_id',
  'created_at',
  'updated_at',
];
export const ACTIVITY_COLUMNS = [
  'user_email',
  'authentication_method',
  'oauth_provider',
  'ip_address',
  'otp_required',
  'success',
  'failure_reason',
  'user_agent',
  'created_at',
  'user_id',
  'session_id',
  'organization_id',
];

export function activityRow(
  random: SeededRandom,
  at: number,
  firstUserId: number,
  userEmails: string[],
  userOrganizations: number[],
): unknown[] {
  const known = userEmails.length > 0 && random.chance(0.88);
  const userIndex = known ? random.int(0, userEmails.length - 1) : -1;
  const email = known
    ? userEmails[userIndex]
    : `${random
        .pick(FIRST_NAMES)
        .toLowerCase()
        .replace(/[^a-z]/g, '')}${random.int(1, 9999)}@unknown.example`;
  const method = random.weighted(METHODS);
  const success = known ? random.chance(0.82) : false;
  const failure = success ? null : known ? random.weighted(FAILURES[method]) : 'unknown_user';
  const ip = random.chance(0.1)
    ? `2001:db8:${random.int(0, 0xffff).toString(16)}::${random.int(1, 0xffff).toString(16)}`
    : `${random.pick([10, 172, 192, 198, 203])}.${random.int(0, 255)}.${random.int(0, 255)}.${random.int(1, 254)}`;
  return [
    email,
    method,
    method === 'oauth' ? random.pick(OAUTH_PROVIDERS) : null,
    ip,
    random.chance(0.3) ? 1 : 0,
    success ? 1 : 0,
    failure,
    random.chance(0.05) ? null : random.pick(USER_AGENTS),
    toSqlDatetime(new Date(at)),
    known ? firstUserId + userIndex : null,
    success ? `sess_${random.hex(32)}` : null,
    known ? userOrganizations[userIndex] : null,
  ];
}

/**
 * The demo roles, each added where missing. Writes first: on SQLite the transaction then waits for
 * another writer's lock; one that read first could not take it later (SQLITE_BUSY at once).
 */
async function ensureRoles(manager: EntityManager): Promise<number[]> {
  for (const name of ROLE_NAMES) {
    await manager.query(
      'INSERT INTO roles (name) SELECT ? FROM (SELECT 1 AS one) AS o' +
        ' WHERE NOT EXISTS (SELECT 1 FROM roles WHERE name = ?)',
      [name, name],
    );
  }
  const roles: { id: number | string; name: string }[] = await manager.query(
    'SELECT id, name FROM roles ORDER BY id',
  );
  return roles.filter((role) => ROLE_NAMES.includes(role.name)).map((role) => Number(role.id));
}

/** The table's highest id; on MySQL/MariaDB locked, so that a writer beside the seed waits, not collides. */
async function maxId(manager: EntityManager, table: string): Promise<number> {
  const lock = manager.connection.options.type === 'mysql' ? ' FOR UPDATE' : '';
  const [row] = await manager.query(`SELECT MAX(id) AS max_id FROM ${table}${lock}`);
  return Number(row?.max_id ?? 0);
}

/** Multi-row INSERTs of `batchSize` rows each; `?` placeholders work on both drivers. */
export async function insertRows(
  manager: EntityManager,
  table: string,
  columns: string[],
  rows: unknown[][],
  batchSize: number,
): Promise<void> {
  const placeholders = `(${columns.map(() => '?').join(', ')})`;
  for (let offset = 0; offset < rows.length; offset += batchSize) {
    const batch = rows.slice(offset, offset + batchSize);
    await manager.query(
      `INSERT INTO ${table} (${columns.join(', ')}) VALUES ${batch.map(() => placeholders).join(', ')}`,
      batch.flat(),
    );
  }
}
