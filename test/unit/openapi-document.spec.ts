import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  generateOpenApiDocument,
  OPENAPI_FILE,
  serializeOpenApiDocument,
} from '../../src/openapi/openapi-generation';

const ROOT = join(__dirname, '..', '..');
const CLIENT_FILE = join(ROOT, 'test', 'client', 'generated', 'listing-api.ts');

/** JSON paths where two documents differ (the first few), to say what is stale. */
function differences(a: unknown, b: unknown, path = '$', out: string[] = []): string[] {
  if (out.length >= 10) return out;
  if (a && b && typeof a === 'object' && typeof b === 'object') {
    const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
    for (const key of keys) {
      differences(
        (a as Record<string, unknown>)[key],
        (b as Record<string, unknown>)[key],
        `${path}.${key}`,
        out,
      );
    }
  } else if (JSON.stringify(a) !== JSON.stringify(b)) {
    out.push(`${path}: code says ${JSON.stringify(a)}, openapi.json says ${JSON.stringify(b)}`);
  }
  return out;
}

describe('the checked-in contract', () => {
  it('openapi.json is what the code generates (else run `npm run openapi`)', async () => {
    const generated = serializeOpenApiDocument(await generateOpenApiDocument());
    const checkedIn = readFileSync(OPENAPI_FILE, 'utf8');
    if (generated !== checkedIn) {
      const diff = differences(JSON.parse(generated), JSON.parse(checkedIn));
      throw new Error(
        [
          'openapi.json is stale: the code documents a different API. Run `npm run openapi` and',
          'commit openapi.json (then `npm run client:generate`). Differences:',
          ...(diff.length ? diff : ['(formatting only)']).map((line) => `  ${line}`),
        ].join('\n'),
      );
    }
  });

  it('the generated client is what openapi-typescript makes of openapi.json (else run `npm run client:generate`)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'client-'));
    try {
      const fresh = join(dir, 'listing-api.ts');
      execFileSync(
        process.execPath,
        [
          join(ROOT, 'node_modules', 'openapi-typescript', 'bin', 'cli.js'),
          OPENAPI_FILE,
          '--output',
          fresh,
        ],
        { cwd: ROOT, stdio: 'pipe' },
      );
      const matches = readFileSync(fresh, 'utf8') === readFileSync(CLIENT_FILE, 'utf8');
      if (!matches) {
        throw new Error(
          'test/client/generated/listing-api.ts is stale: run `npm run client:generate` and commit it.',
        );
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
