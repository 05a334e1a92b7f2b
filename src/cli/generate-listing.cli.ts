import { resolve } from 'node:path';
import { runCli, UsageError } from './cli-support';
import { generateListing, shown } from './generate-listing/generate-listing';

const USAGE = `Usage: npm run generate:listing -- <name> [--singular <name>] [--out <project folder>]

Writes the skeleton of a listing module: src/<name>/ (definition, entity, filter DTO, view,
repository, service, controller, module), a migration (registered in migrations/index.ts) and
test/e2e/<name>.e2e-spec.ts running the shared listing contract. <name> is plural and lower case,
e.g. delivery-addresses (served as GET /v1/delivery_addresses, scope delivery_addresses:read).`;

/** Writes a new listing module's skeleton and says what to do next. */
async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const positional: string[] = [];
  const flags: Record<string, string> = {};
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    if (arg === '--help' || arg === '-h') {
      console.log(USAGE);
      return;
    }
    if (arg === '--out' || arg === '--singular') {
      const value = args[++i];
      if (!value) throw new UsageError(`${arg} needs a value\n\n${USAGE}`);
      flags[arg.slice(2)] = value;
    } else if (arg.startsWith('-')) {
      throw new UsageError(`unknown option ${arg}\n\n${USAGE}`);
    } else {
      positional.push(arg);
    }
  }
  if (positional.length !== 1) throw new UsageError(USAGE);
  const out = resolve(flags.out ?? process.cwd());

  let result;
  try {
    result = await generateListing({ name: positional[0], singular: flags.singular, out });
  } catch (error) {
    throw new UsageError(error instanceof Error ? error.message : String(error));
  }
  const { names } = result;
  console.log(
    `Wrote the ${names.words} listing (GET /v1/${names.snake}, scope ${names.snake}:read):`,
  );
  for (const file of result.written) console.log(`  ${shown(out, file)}`);
  if (result.registeredMigration) {
    console.log(
      `  (and registered its migration in ${shown(out, 'src/database/migrations/index.ts')})`,
    );
  }
  console.log('\nNext:');
  result.nextSteps.forEach((step, i) => console.log(`  ${i + 1}. ${step}`));
}

runCli(main);
