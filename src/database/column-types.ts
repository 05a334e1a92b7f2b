import type { ColumnOptions } from 'typeorm';

/**
 * Entities describe the tables for TypeORM's metadata only; the schema itself is created by the
 * migrations. Column types here are the MySQL ones, which the SQLite driver maps to its own.
 */
export const timestampColumn = (options: ColumnOptions = {}): ColumnOptions => ({
  type: 'datetime',
  precision: 3,
  ...options,
});

export const bigintColumn = (options: ColumnOptions = {}): ColumnOptions => ({
  type: 'bigint',
  // mysql2 hands BIGINT back as a string unless it is told otherwise; ids stay well within 2^53.
  transformer: {
    to: (value: unknown) => value,
    from: (value: unknown) => (value === null || value === undefined ? value : Number(value)),
  },
  ...options,
});
