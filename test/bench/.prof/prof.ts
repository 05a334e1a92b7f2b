import { spawn } from 'node:child_process';
import autocannon from 'autocannon';
import { openBenchDataSource, benchDatabaseUrl } from '../bench-database';
import { ApiTokensRepository } from '../../../src/auth/api-tokens.repository';
import { TokenIssuer } from '../../../src/auth/token-issuer';
import { SCOPES } from '../../../src/common/auth/principal';
async function main() {
  const url = benchDatabaseUrl('listing_bench_small');
  const ds = await openBenchDataSource(url);
  const { token } = await new TokenIssuer(new ApiTokensRepository(ds)).issue({ name: 'p', scopes: SCOPES });
  await ds.destroy();
  const child = spawn(process.execPath, ['--cpu-prof', '--cpu-prof-dir=/tmp/prof5', 'dist/main.js'], { cwd: '/work/wt-5', stdio: 'inherit', env: { PATH: process.env.PATH, NODE_ENV: 'production', HOST: '127.0.0.1', PORT: '3905', DATABASE_URL: url, RATE_LIMIT_PER_MINUTE: '0', LOG_LEVEL: 'warn', LOG_PRETTY: 'false' } });
  for (;;) { try { if ((await fetch('http://127.0.0.1:3905/health/live')).ok) break; } catch {} await new Promise(r => setTimeout(r, 200)); }
  const path = process.argv[2];
  const r = await autocannon({ url: 'http://127.0.0.1:3905' + path, connections: 32, duration: 8, headers: { authorization: `Bearer ${process.argv[3] === 'bad' ? 'lsk_' + 'A'.repeat(43) : token}` } });
  console.log(r.requests.average, r.latency.p50, r.latency.p99, r.statusCodeStats);
  child.kill('SIGINT');
  await new Promise(r => child.once('exit', r));
}
main();
