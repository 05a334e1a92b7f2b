import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  generateOpenApiDocument,
  OPENAPI_FILE,
  serializeOpenApiDocument,
} from '../../src/openapi/openapi-generation';

import type { operations } from '../client/generated/listing-api';

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
  }, 30_000);

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
  }, 30_000);
});

describe('openapi.json describes what CONTRACT.md promises', () => {
  const document = JSON.parse(readFileSync(OPENAPI_FILE, 'utf8'));
  const operations = Object.entries(document.paths).map(([path, item]) => ({
    path,
    operation: (item as Record<string, Record<string, unknown>>).get,
  }));

  it('lists the listings, each needing a bearer token with its scope', () => {
    // A module added to AppModule adds its own (openapi.json is held to the app above).
    expect(operations.map(({ path }) => path)).toEqual(
      expect.arrayContaining(['/v1/login_activities', '/v1/users']),
    );
    for (const { path, operation } of operations) {
      expect(operation.security).toEqual([{ bearer: [] }]);
      expect(operation['x-required-scopes']).toEqual([`${path.slice(4)}:read`]);
    }
    expect(document.components.securitySchemes.bearer).toMatchObject({
      type: 'http',
      scheme: 'bearer',
    });
  });

  it("names in an operation's descriptions only parameters that operation takes", () => {
    for (const { path, operation } of operations) {
      const taken = new Set((operation.parameters as { name: string }[]).map(({ name }) => name));
      const described = JSON.stringify(operation.responses);
      const named = [...described.matchAll(/`([a-z_]+)(?:=[^`]*)?`/g)]
        .map(([, name]) => name)
        .filter((name) => /_(from|to)$/.test(name) || name === 'sort');
      expect({ path, missing: named.filter((name) => !taken.has(name)) }).toEqual({
        path,
        missing: [],
      });
    }
  });

  it('gives every parameter once, with its type, bounds, default and enum', () => {
    for (const { operation } of operations) {
      const parameters = operation.parameters as {
        name: string;
        in: string;
        description?: string;
        schema: Record<string, unknown>;
      }[];
      const names = parameters.map((parameter) => parameter.name);
      expect(new Set(names).size).toBe(names.length);
      for (const parameter of parameters) {
        expect(parameter.in).toBe('query');
        expect(parameter.description).toBeTruthy();
        expect(['integer', 'string', 'boolean']).toContain(parameter.schema.type);
        if (parameter.schema.type === 'integer') {
          expect(parameter.schema).toHaveProperty('minimum');
          expect(parameter.schema).toHaveProperty('maximum');
        }
      }
      const byName = Object.fromEntries(parameters.map((p) => [p.name, p.schema]));
      expect(byName.page).toMatchObject({ minimum: 1, maximum: 2 ** 31 - 1, default: 1 });
      expect(byName.limit).toMatchObject({ minimum: 1, maximum: 100, default: 20 });
      expect(byName.sort.enum).toEqual(expect.arrayContaining(['id', '-id', 'created_at']));
    }
  });

  it('names an envelope schema per resource, with every item field required and typed', () => {
    const nameOf = (schema: { $ref: string }) => schema.$ref.split('/').pop()!;
    const pages = operations.map(({ operation }) => {
      const { content } = (operation.responses as Record<string, Record<string, unknown>>)['200'];
      const { schema } = (content as Record<string, { schema: { $ref: string } }>)[
        'application/json'
      ];
      return nameOf(schema);
    });
    expect(pages).toEqual(expect.arrayContaining(['UserPage', 'LoginActivityPage']));
    for (const envelope of pages) {
      const item = nameOf(document.components.schemas[envelope].properties.data.items);
      const schema = document.components.schemas[item];
      expect([...schema.required].sort()).toEqual(Object.keys(schema.properties).sort());
      for (const property of Object.values(schema.properties) as {
        type?: string;
        anyOf?: { type?: string }[];
      }[]) {
        // An open enum is anyOf its known values and any other string: typed by its branches.
        const branches = new Set(property.anyOf?.map((branch) => branch.type));
        const type = property.type ?? (branches.size === 1 ? [...branches][0] : undefined);
        expect(['integer', 'string', 'boolean']).toContain(type);
      }
    }
    const activity = document.components.schemas.LoginActivityView.properties;
    const nullable = Object.keys(activity).filter((name) => activity[name].nullable);
    expect(nullable.sort()).toEqual(
      ['failure_reason', 'oauth_provider', 'session_id', 'user_agent', 'user_id'].sort(),
    );
    // Known providers, any other passed through, or null.
    expect(activity.oauth_provider).toMatchObject({
      nullable: true,
      anyOf: [{ type: 'string', enum: expect.arrayContaining(['google']) }, { type: 'string' }],
    });
    expect(activity.created_at).toMatchObject({ format: 'date-time', pattern: expect.any(String) });
  });

  it('lets the generated client take a reply without RateLimit fields (rate limiting off)', () => {
    type PageHeaders = operations['listUsers']['responses'][200]['headers'];
    // Does not type-check where the client takes the fields as required.
    const headers: PageHeaders = { 'X-Request-Id': 'r', 'Cache-Control': 'private, no-cache' };
    expect(headers).not.toHaveProperty('RateLimit');
    const client = readFileSync(CLIENT_FILE, 'utf8');
    expect(client).toMatch(/"RateLimit-Policy"\?: string;/);
    expect(client).toMatch(/RateLimit\?: string;/);
  });

  it('documents every error reply as problem+json, with its headers', () => {
    for (const { operation } of operations) {
      const responses = operation.responses as Record<string, { $ref?: string }>;
      for (const status of ['400', '401', '403', '404', '405', '406', '429', '500', '503']) {
        const name = responses[status].$ref!.split('/').pop()!;
        const response = document.components.responses[name];
        expect(response.content['application/problem+json'].schema).toEqual({
          $ref: '#/components/schemas/ProblemView',
        });
        expect(Object.keys(response.headers)).toEqual(
          expect.arrayContaining(['X-Request-Id', 'RateLimit', 'RateLimit-Policy']),
        );
      }
    }
    const headersOf = (name: string) => Object.keys(document.components.responses[name].headers);
    expect(headersOf('Unauthorized')).toContain('WWW-Authenticate');
    expect(headersOf('Forbidden')).toContain('WWW-Authenticate');
    expect(headersOf('TooManyRequests')).toContain('Retry-After');
    expect(headersOf('ServiceUnavailable')).toContain('Retry-After');
    expect(headersOf('MethodNotAllowed')).toContain('Allow');
  });

  it('explains paging and the staleness of totals in the API description', () => {
    expect(document.info.version).toMatch(/^\d+\.\d+\.\d+$/);
    expect(document.info.description).toContain('page_count');
    expect(document.info.description).toContain('Totals may be a few seconds old');
  });
});
