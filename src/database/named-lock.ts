import { Logger } from '@nestjs/common';
import type { DataSource, QueryRunner } from 'typeorm';
import { clientBoundFor } from './app-data-source-options';

/** How long a process waits for another one's turn (migrations, a seed). */
const LOCK_WAIT_S = 600;
/** How long it waits before it says so. */
const QUIET_WAIT_S = 1;

/** How a process waits for its turn: `onWait` hears once that another has it, before waiting. */
export interface TurnOptions {
  onWait?: (message: string) => void;
  waitS?: number;
}

/**
 * A server's turn: no longer than its client bound lets a statement run (it then tries again
 * later), and said once at warn, at once (boot's lines are otherwise held until it has started).
 */
export function serverTurn(logger: Logger, statementTimeoutMs: number): TurnOptions {
  let said = false;
  return {
    waitS: Math.max(1, Math.floor(clientBoundFor(statementTimeoutMs) / 1000) - 1),
    onWait: (message) => {
      if (said) return;
      said = true;
      Logger.flush();
      logger.warn(message);
    },
  };
}

/**
 * `work`, one process at a time per database and `name`: on MySQL/MariaDB under a named lock
 * (GET_LOCK) held by the connection `work` is given, which it must run on (with a pool of one, a
 * second connection would never come). On SQLite in a transaction that takes the file's write
 * lock before `work` reads: one that read first could not write once another process had.
 */
export async function oneAtATime<T>(
  dataSource: DataSource,
  name: string,
  work: (runner: QueryRunner) => Promise<T>,
  { onWait, waitS = LOCK_WAIT_S }: TurnOptions = {},
): Promise<T> {
  if (dataSource.options.type !== 'mysql') return withWriteLock(dataSource, work);
  const runner = dataSource.createQueryRunner();
  // The database's name hashed: MySQL 8 takes lock names of at most 64 characters.
  const lockName = `CONCAT('listing-${name}:', SHA1(DATABASE()))`;
  try {
    const lock = async (waitS: number) => {
      const [row] = await runner.query(`SELECT GET_LOCK(${lockName}, ${waitS}) AS locked`);
      return Number(row?.locked) === 1;
    };
    // A turn another takes for a moment (its check that nothing is pending) goes unmentioned.
    let locked = await lock(QUIET_WAIT_S);
    if (!locked) {
      onWait?.(`waiting for another process to finish its ${name} (up to ${waitS} s)`);
      locked = await lock(Math.max(0, waitS - QUIET_WAIT_S));
    }
    if (!locked) {
      const error = new Error(`another process held the ${name} lock for ${waitS} s`);
      throw Object.assign(error, { code: `${name}_locked` });
    }
    try {
      return await work(runner);
    } finally {
      await runner.query(`SELECT RELEASE_LOCK(${lockName})`).catch(() => undefined);
    }
  } finally {
    await runner.release();
  }
}

/** `work` in a SQLite transaction begun IMMEDIATE: it waits for other writers, then holds them off. */
async function withWriteLock<T>(
  dataSource: DataSource,
  work: (runner: QueryRunner) => Promise<T>,
): Promise<T> {
  const runner = dataSource.createQueryRunner();
  try {
    await runner.query('BEGIN IMMEDIATE');
    try {
      const result = await work(runner);
      await runner.query('COMMIT');
      return result;
    } catch (error) {
      await runner.query('ROLLBACK').catch(() => undefined);
      throw error;
    }
  } finally {
    await runner.release();
  }
}
