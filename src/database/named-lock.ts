import type { DataSource, QueryRunner } from 'typeorm';

/** How long a process waits for another one's turn (migrations, a seed). */
const LOCK_WAIT_S = 600;

/**
 * `work`, one process at a time per database and `name`: on MySQL/MariaDB under a named lock
 * (GET_LOCK) held by the connection `work` is given, which it must run on (with a pool of one, a
 * second connection would never come). On SQLite, as it comes: the file lets one writer in at a
 * time (`work` writes before it reads, or takes the write lock first). `onWait` hears once that
 * another process has the turn, before waiting for it.
 */
export async function oneAtATime<T>(
  dataSource: DataSource,
  name: string,
  work: (runner?: QueryRunner) => Promise<T>,
  onWait?: (message: string) => void,
): Promise<T> {
  if (dataSource.options.type !== 'mysql') return work();
  const runner = dataSource.createQueryRunner();
  // The database's name hashed: MySQL 8 takes lock names of at most 64 characters.
  const lockName = `CONCAT('listing-${name}:', SHA1(DATABASE()))`;
  try {
    const lock = async (waitS: number) => {
      const [row] = await runner.query(`SELECT GET_LOCK(${lockName}, ${waitS}) AS locked`);
      return Number(row?.locked) === 1;
    };
    let locked = await lock(0);
    if (!locked) {
      onWait?.(`waiting for another process to finish its ${name} (up to ${LOCK_WAIT_S} s)`);
      locked = await lock(LOCK_WAIT_S);
    }
    if (!locked) {
      throw new Error(`another process held the ${name} lock for ${LOCK_WAIT_S} s`);
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
