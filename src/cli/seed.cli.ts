import { parseArgs } from 'node:util';
import { seedDemoData } from '../database/seed/demo-data';
import { CLI_TURN, openDataSource, runCli, UsageError } from './cli-support';

const USAGE = `usage: npm run seed -- [--users N] [--activities M] [--organizations K] [--seed S]
Appends deterministic demo data (defaults: 1000 users, 10000 activities).`;

function count(value: string | undefined, name: string, fallback: number): number {
  if (value === undefined) return fallback;
  if (!/^\d{1,9}$/.test(value)) throw new UsageError(`--${name} must be a whole number\n${USAGE}`);
  return Number(value);
}

async function main(): Promise<void> {
  let values;
  try {
    ({ values } = parseArgs({
      options: {
        users: { type: 'string' },
        activities: { type: 'string' },
        organizations: { type: 'string' },
        seed: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
      strict: true,
    }));
  } catch (error) {
    throw new UsageError(`${(error as Error).message}\n${USAGE}`);
  }
  if (values.help) {
    console.log(USAGE);
    return;
  }
  const users = count(values.users, 'users', 1000);
  const activities = count(values.activities, 'activities', 10_000);
  const organizations =
    values.organizations === undefined
      ? undefined
      : count(values.organizations, 'organizations', 1);
  const seed = count(values.seed, 'seed', 20261122);
  if (organizations === 0 && users > 0) {
    throw new UsageError(`--organizations must be at least 1 for users to belong to\n${USAGE}`);
  }

  const { dataSource } = await openDataSource({ migrationsRun: true });
  const started = Date.now();
  try {
    const result = await seedDemoData(dataSource, {
      users,
      activities,
      organizations,
      seed,
      onProgress: (message) => console.log(message),
      turn: CLI_TURN,
    });
    console.log(
      `seeded ${result.organizations} organizations, ${result.users} users, ${result.activities} login activities in ${((Date.now() - started) / 1000).toFixed(1)} s`,
    );
  } finally {
    await dataSource.destroy();
  }
}

runCli(main);
