import { parseArgs, ParseArgsConfig } from 'node:util';
import { ApiTokensRepository } from '../auth/api-tokens.repository';
import { parseDuration } from '../auth/token-format';
import { TokenIssueError, TokenIssuer } from '../auth/token-issuer';
import { registeredScopeNames } from '../common/auth/scope-registry';
import { loadListingScopes, openMigratedDataSource, runCli, UsageError } from './cli-support';

/** The last instant a DATETIME column holds. */
const LATEST_EXPIRY = Date.parse('9999-12-31T23:59:59.999Z');

// A function: the scopes are registered once main has loaded the listings.
const usage = () => `usage:
  npm run token -- create --name NAME --scopes SCOPE[,SCOPE...] [--organization ID] [--expires-in 30d]
  npm run token -- list
  npm run token -- revoke ID

SCOPE is one of: ${registeredScopeNames().join(', ')}.
create prints the new token as the last line of its output. It is shown once and stored only
as a SHA-256 hash. --expires-in takes a number and a unit: s, m, h, d or w (e.g. 90d).`;

async function main(): Promise<void> {
  loadListingScopes();
  const [command, ...rest] = process.argv.slice(2);
  if (!command || command === 'help' || command === '--help' || command === '-h') {
    console.log(usage());
    if (!command) throw new UsageError('a command is needed: create, list or revoke');
    return;
  }
  try {
    switch (command) {
      case 'create':
        return await create(rest);
      case 'list':
        return await list(rest);
      case 'revoke':
        return await revoke(rest);
      default:
        throw new UsageError(`unknown command "${command}"\n${usage()}`);
    }
  } catch (error) {
    if (!(error instanceof HelpAsked)) throw error;
    console.log(usage());
  }
}

/** `--help` or `-h` among a command's options (not a value: `--name -h` stays a usage error). */
class HelpAsked {}

function parse(args: string[], options: ParseArgsConfig['options']) {
  let parsed;
  try {
    parsed = parseArgs({
      args,
      options: { ...options, help: { type: 'boolean', short: 'h' } },
      allowPositionals: true,
      strict: true,
    }) as { values: Record<string, string | boolean | undefined>; positionals: string[] };
  } catch (error) {
    throw new UsageError(`${(error as Error).message}\n${usage()}`);
  }
  if (parsed.values.help) throw new HelpAsked();
  return parsed;
}

/** A command that takes no words but its options (a space in `--scopes a b` leaves one). */
function noPositionals(positionals: string[]): void {
  if (positionals.length) {
    throw new UsageError(`unexpected argument "${positionals[0]}"\n${usage()}`);
  }
}

async function create(args: string[]): Promise<void> {
  const { values, positionals } = parse(args, {
    name: { type: 'string' },
    scopes: { type: 'string' },
    organization: { type: 'string' },
    'expires-in': { type: 'string' },
  });
  noPositionals(positionals);
  const name = values.name as string | undefined;
  const scopes = values.scopes as string | undefined;
  if (!name) throw new UsageError(`--name is required\n${usage()}`);
  if (!scopes) throw new UsageError(`--scopes is required\n${usage()}`);
  const organization = values.organization as string | undefined;
  if (organization !== undefined && !/^[1-9]\d{0,15}$/.test(organization)) {
    throw new UsageError('--organization must be a positive integer id');
  }
  const expiresIn = values['expires-in'] as string | undefined;
  const expiresInMs = expiresIn === undefined ? null : parseDuration(expiresIn);
  if (expiresIn !== undefined && expiresInMs === null) {
    throw new UsageError('--expires-in must be a number and a unit, e.g. 90s, 15m, 12h, 30d, 2w');
  }
  // A DATETIME holds years up to 9999: a later expiry was stored wrapped (expired) or refused.
  if (expiresInMs !== null && Date.now() + expiresInMs > LATEST_EXPIRY) {
    throw new UsageError(
      '--expires-in must end by 9999-12-31; leave it out for a token that never expires',
    );
  }

  const { dataSource } = await openMigratedDataSource();
  try {
    const organizationId = organization === undefined ? null : Number(organization);
    if (organizationId !== null) {
      const [row] = await dataSource.query('SELECT COUNT(*) AS n FROM organizations WHERE id = ?', [
        organizationId,
      ]);
      if (Number(row?.n ?? 0) === 0) {
        throw new UsageError(`--organization ${organizationId}: no such organization`);
      }
    }
    const issuer = new TokenIssuer(new ApiTokensRepository(dataSource));
    const issued = await issuer
      .issue({
        name,
        scopes: scopes
          .split(',')
          .map((scope) => scope.trim())
          .filter(Boolean),
        organizationId,
        expiresInMs,
      })
      .catch((error: unknown) => {
        throw error instanceof TokenIssueError ? new UsageError(error.message) : error;
      });
    const record = issued.record;
    console.log(`created token ${record.id} "${record.name}"`);
    console.log(`  scopes:       ${record.scopes.split(' ').join(', ')}`);
    console.log(`  organization: ${record.organization_id ?? 'all (platform-wide)'}`);
    console.log(`  expires:      ${record.expires_at ? record.expires_at.toISOString() : 'never'}`);
    console.log('store it now: it is not shown again.');
    console.log(issued.token);
  } finally {
    await dataSource.destroy();
  }
}

async function list(args: string[]): Promise<void> {
  noPositionals(parse(args, {}).positionals);
  const { dataSource } = await openMigratedDataSource();
  try {
    const tokens = await new TokenIssuer(new ApiTokensRepository(dataSource)).list();
    if (tokens.length === 0) {
      console.log('no tokens');
      return;
    }
    const now = Date.now();
    const rows = tokens.map((token) => ({
      id: token.id,
      name: token.name,
      prefix: `${token.token_prefix}…`,
      scopes: token.scopes.split(' ').join(','),
      organization: token.organization_id ?? '-',
      status: token.revoked_at
        ? 'revoked'
        : token.expires_at && token.expires_at.getTime() <= now
          ? 'expired'
          : 'active',
      expires_at: token.expires_at?.toISOString() ?? '-',
      last_used_at: token.last_used_at?.toISOString() ?? '-',
      created_at: token.created_at.toISOString(),
    }));
    console.table(rows);
  } finally {
    await dataSource.destroy();
  }
}

async function revoke(args: string[]): Promise<void> {
  const { positionals } = parse(args, {});
  const [id] = positionals;
  if (!id || !/^[1-9]\d{0,15}$/.test(id) || positionals.length > 1) {
    throw new UsageError(`revoke needs one token id\n${usage()}`);
  }
  const { dataSource } = await openMigratedDataSource();
  try {
    const revoked = await new TokenIssuer(new ApiTokensRepository(dataSource)).revoke(Number(id));
    if (!revoked) throw new UsageError(`token ${id}: no such active token`);
    console.log(`revoked token ${id}`);
  } finally {
    await dataSource.destroy();
  }
}

runCli(main);
