import type { DataSource } from 'typeorm';
import { toSqlDatetime } from '../../src/database/row-values';

export interface OrganizationRow {
  id: number;
  name: string;
}
export interface RoleRow {
  id: number;
  name: string;
}
export interface UserRow {
  id: number;
  name: string;
  email: string;
  role_id: number;
  organization_id: number;
  created_at: Date;
  updated_at: Date;
}
export interface LoginActivityRow {
  id: number;
  user_email: string;
  authentication_method: string;
  oauth_provider: string | null;
  ip_address: string;
  otp_required: boolean;
  success: boolean;
  failure_reason: string | null;
  user_agent: string | null;
  created_at: Date;
  user_id: number | null;
  session_id: string | null;
  organization_id: number | null;
}

/** Shared by every factory of the process: two kits on one database must not make the same e-mail. */
let sequence = 0;

type FieldType = 'text' | 'boolean' | 'id' | 'time' | 'user';
/** Each field's type, and whether it takes null. */
type Fields = Record<string, [type: FieldType, nullable?: 'nullable']>;

const USER_FIELDS: Fields = {
  name: ['text'],
  email: ['text'],
  role_id: ['id'],
  organization_id: ['id'],
  created_at: ['time'],
  updated_at: ['time'],
};
const LOGIN_ACTIVITY_FIELDS: Fields = {
  user: ['user'],
  user_email: ['text'],
  authentication_method: ['text'],
  oauth_provider: ['text', 'nullable'],
  ip_address: ['text'],
  otp_required: ['boolean'],
  success: ['boolean'],
  failure_reason: ['text', 'nullable'],
  user_agent: ['text', 'nullable'],
  created_at: ['time'],
  user_id: ['id', 'nullable'],
  session_id: ['text', 'nullable'],
  organization_id: ['id', 'nullable'],
};

const isOfType: Record<FieldType, (value: unknown) => boolean> = {
  text: (value) => typeof value === 'string',
  boolean: (value) => typeof value === 'boolean',
  id: (value) => Number.isSafeInteger(value) && (value as number) > 0,
  time: (value) =>
    value instanceof Date && value.getTime() >= EARLIEST_TIME && value.getTime() <= LATEST_TIME,
  user: (value) => {
    const user = value as Partial<UserRow> | null;
    return (
      isOfType.id(user?.id) && isOfType.text(user?.email) && isOfType.id(user?.organization_id)
    );
  },
};
const typeNames: Record<FieldType, string> = {
  text: 'a string',
  boolean: 'true or false',
  id: 'a positive integer',
  time: 'a valid Date from year 1 to 9999',
  user: 'a user data.user() made (id, email, organization_id)',
};

/** What a DATETIME column holds. */
const EARLIEST_TIME = Date.parse('0001-01-01T00:00:00.000Z');
const LATEST_TIME = Date.parse('9999-12-31T23:59:59.999Z');

/** A value as a refusal names it: a Date as a Date, a bigint as one. */
function shown(value: unknown): string {
  if (value instanceof Date) {
    return Number.isNaN(value.getTime()) ? 'an invalid Date' : `the Date ${value.toISOString()}`;
  }
  if (typeof value === 'bigint') return `${value}n`;
  return JSON.stringify(value) ?? String(value);
}

/**
 * A misspelt field (`organisation_id`) would otherwise be dropped, or fail as a driver error; a
 * value of another type (`success: 'false'`, which jest's transpiler does not type-check) would
 * be written as something else (`'false'` is stored as true).
 */
function checkFields(kind: string, values: object, fields: Fields): void {
  const known = Object.keys(fields);
  const unknown = Object.keys(values).filter((field) => !known.includes(field));
  if (unknown.length) {
    throw new Error(
      `data.${kind}() has no field ${unknown.join(', ')} (it takes ${known.join(', ')})`,
    );
  }
  for (const [field, value] of Object.entries(values)) {
    const [type, nullable] = fields[field];
    if (value === undefined || (value === null && nullable)) continue;
    if (!isOfType[type](value)) {
      throw new Error(
        `data.${kind}(): ${field} must be ${typeNames[type]}${nullable ? ' or null' : ''}, not ${shown(value)}`,
      );
    }
  }
}

/**
 * Rows in one line each, with sensible defaults: `await data.user({ name: 'Ada' })` makes its
 * organization and role when none are given. Everything goes in through plain SQL, as the
 * upstream system would write it.
 */
export class DataFactory {
  constructor(private readonly dataSource: DataSource) {}

  async organization(values: Partial<Omit<OrganizationRow, 'id'>> = {}): Promise<OrganizationRow> {
    checkFields('organization', values, { name: ['text'] });
    const name = values.name ?? `Organization ${this.next()}`;
    const id = await this.insert('organizations', {
      name,
      created_at: toSqlDatetime(new Date('2026-01-01T00:00:00.000Z')),
    });
    return { id, name };
  }

  async role(values: Partial<Omit<RoleRow, 'id'>> = {}): Promise<RoleRow> {
    checkFields('role', values, { name: ['text'] });
    const name = values.name ?? `role-${this.next()}`;
    return { id: await this.insert('roles', { name }), name };
  }

  async user(values: Partial<Omit<UserRow, 'id'>> = {}): Promise<UserRow> {
    checkFields('user', values, USER_FIELDS);
    const n = this.next();
    const organization_id = values.organization_id ?? (await this.organization()).id;
    const role_id = values.role_id ?? (await this.role()).id;
    const created_at = values.created_at ?? new Date(Date.UTC(2026, 0, 1, 0, 0, n % 60, n % 1000));
    const row = {
      name: values.name ?? `User ${n}`,
      email: values.email ?? `user${n}.${process.pid}@example.test`,
      role_id,
      organization_id,
      created_at,
      updated_at: values.updated_at ?? created_at,
    };
    const id = await this.insert('users', {
      ...row,
      created_at: toSqlDatetime(row.created_at),
      updated_at: toSqlDatetime(row.updated_at),
    });
    return { id, ...row };
  }

  /**
   * A login attempt; by default a successful password login by `user` (or by the user `user_id`
   * names, read back; with neither, an unknown e-mail).
   */
  async loginActivity(
    values: Partial<Omit<LoginActivityRow, 'id'>> & { user?: UserRow } = {},
  ): Promise<LoginActivityRow> {
    checkFields('loginActivity', values, LOGIN_ACTIVITY_FIELDS);
    const n = this.next();
    const { user: given, ...rest } = values;
    const user = given ?? (rest.user_id != null ? await this.userById(rest.user_id) : undefined);
    const success = rest.success ?? true;
    const method = rest.authentication_method ?? 'password';
    const row: Omit<LoginActivityRow, 'id'> = {
      user_email: user?.email ?? `unknown${n}@nowhere.test`,
      authentication_method: method,
      oauth_provider: method === 'oauth' ? 'google' : null,
      ip_address: `192.0.2.${(n % 250) + 1}`,
      otp_required: false,
      success,
      failure_reason: success ? null : user ? 'invalid_credentials' : 'unknown_user',
      user_agent: 'jest',
      created_at: new Date(Date.UTC(2026, 5, 1, 0, 0, 0, n)),
      user_id: user?.id ?? null,
      session_id: success ? `sess_${n}` : null,
      organization_id: user?.organization_id ?? null,
      ...rest,
    };
    const id = await this.insert('login_activities', {
      ...row,
      otp_required: row.otp_required ? 1 : 0,
      success: row.success ? 1 : 0,
      created_at: toSqlDatetime(row.created_at),
    });
    return { id, ...row };
  }

  /**
   * A row of any table (a module's own), in one line: `await data.row('widgets', { name: 'A' })`
   * gives its id. Dates are written as UTC DATETIME text and booleans as 1/0, on both databases.
   */
  async row(table: string, values: Record<string, unknown>): Promise<number> {
    return this.insert(table, sqlValues(values));
  }

  /**
   * Many rows of any table, 500 to a statement, as `row` writes them (in order; rows that name
   * other columns than the one before go in a statement of their own): enough for a plan check
   * in seconds. `await data.rows('widgets', 3000, (i) => ({ name: `W${i % 50}` }))`.
   */
  async rows(
    table: string,
    count: number,
    make: (index: number) => Record<string, unknown>,
  ): Promise<void> {
    let run: Record<string, unknown>[] = [];
    let runColumns = '';
    const flush = async () => {
      if (!run.length) return;
      const columns = Object.keys(run[0]);
      const tuple = `(${columns.map(() => '?').join(', ')})`;
      await this.dataSource.query(
        `INSERT INTO \`${table}\` (${columns.map((column) => `\`${column}\``).join(', ')}) VALUES ${run.map(() => tuple).join(', ')}`,
        run.flatMap((row) => columns.map((column) => row[column])),
      );
      run = [];
    };
    for (let index = 0; index < count; index++) {
      const row = sqlValues(make(index));
      const columns = Object.keys(row).join('\n');
      if (columns !== runColumns || run.length === ROWS_PER_INSERT) await flush();
      runColumns = columns;
      run.push(row);
    }
    await flush();
  }

  /** Several of a kind: `await data.many(25, (i) => data.user({ name: `U${i}` }))`. */
  async many<T>(count: number, make: (index: number) => Promise<T>): Promise<T[]> {
    const out: T[] = [];
    for (let i = 0; i < count; i++) out.push(await make(i));
    return out;
  }

  private next(): number {
    sequence += 1;
    return sequence;
  }

  private async userById(id: number): Promise<UserRow> {
    const [row] = await this.dataSource.query(
      'SELECT id, email, organization_id FROM users WHERE id = ?',
      [id],
    );
    if (!row) throw new Error(`data.loginActivity(): no user has the id ${id}`);
    return { ...row, id: Number(row.id), organization_id: Number(row.organization_id) } as UserRow;
  }

  private async insert(table: string, values: Record<string, unknown>): Promise<number> {
    const columns = Object.keys(values);
    const mysql = this.dataSource.options.type === 'mysql';
    // On SQLite the key (the rowid, whatever its column's name) comes back with the insert: a second
    // statement on the shared connection could read another insert's (factories in one Promise.all).
    const result = await this.dataSource.query(
      `INSERT INTO \`${table}\` (${columns.map((column) => `\`${column}\``).join(', ')}) VALUES (${columns.map(() => '?').join(', ')})${mysql ? '' : ' RETURNING rowid AS id'}`,
      Object.values(values),
    );
    return Number(mysql ? result.insertId : result[0].id);
  }
}

const ROWS_PER_INSERT = 500;

/** Values as both databases take them: dates as UTC DATETIME text, booleans as 1/0. */
const sqlValues = (values: Record<string, unknown>): Record<string, unknown> =>
  Object.fromEntries(
    Object.entries(values).map(([column, value]) => [
      column,
      value instanceof Date
        ? toSqlDatetime(value)
        : typeof value === 'boolean'
          ? Number(value)
          : value,
    ]),
  );
