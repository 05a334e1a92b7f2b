import { registeredScopes } from '../../src/common/auth/scope-registry';
import { parseLinks } from './links';
import { asExport } from './reference-rows';
import { listingSchemaProblems, servedListings } from './listing-schema';
import { ApiClient, startTestApp, TestApp, TestAppOptions } from './test-app';

/** What the shared suite needs to know about one listing. */
export interface ListingContract {
  /** Shown in the test names, e.g. `users`. */
  name: string;
  /** The collection, e.g. `/v1/users`. */
  path: string;
  /** The scope a token needs for it, e.g. `users:read`. */
  scope: string;
  /** Modules the app needs besides its own (a listing only a test defines). */
  imports?: TestAppOptions['imports'];
  env?: TestAppOptions['env'];
  /** Runs once after boot, before any seeding (e.g. to create a table a test module owns). */
  prepare?: (kit: TestApp) => Promise<void>;
  /** Inserts `count` rows of the listing belonging to `organizationId`; returns their ids. */
  seed: (kit: TestApp, count: number, organizationId: number) => Promise<number[]>;
  /**
   * Its rows belong to no organization (`organizationColumn: null`): every token with the scope
   * sees them all, a scoped one too. `seed` is then called without regard to its organization.
   */
  shared?: boolean;
  /** For listings whose rows may belong to no organization (only platform-wide tokens see them). */
  seedWithoutOrganization?: (kit: TestApp, count: number) => Promise<number[]>;
}

interface Item {
  id: number;
  [field: string]: unknown;
}
interface Pagination {
  current_page: number;
  limit: number;
  page_count: number;
}
interface SchemaNode {
  $ref?: string;
  type?: string;
  format?: string;
  nullable?: boolean;
  items?: SchemaNode;
  properties?: Record<string, SchemaNode>;
}

const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const idsOf = (body: { data: Item[] }) => body.data.map((item) => item.id);
const pages = (total: number, limit: number) => Math.ceil(total / limit);

/**
 * The rules every listing shares (CONTRACT §3-§5), run against one listing on its own app and
 * database: envelope and fields, paging arithmetic, X-Total-Count, Link, the walk by `next`, 400s,
 * 401/403 and organization scope. A module's own e2e file adds only what is its own (filters,
 * field values).
 *
 *   describeListingContract({ name: 'users', path: '/v1/users', scope: 'users:read', seed });
 */
export function describeListingContract(listing: ListingContract): void {
  describe(`listing contract: GET ${listing.path}`, () => {
    let kit: TestApp;
    /** Platform-wide, with the listing's scope alone. */
    let api: ApiClient;
    /** Every row, in id order; and those of each organization. */
    let all: number[];
    let ofA: number[];
    let ofB: number[];
    let orgA: number;
    let orgB: number;

    beforeAll(async () => {
      kit = await startTestApp({ imports: listing.imports, env: listing.env });
      await listing.prepare?.(kit);
      orgA = (await kit.data.organization()).id;
      orgB = (await kit.data.organization()).id;
      ofA = [];
      ofB = [];
      const unscoped: number[] = [];
      // Interleaved, so that a scope filters the walk rather than cutting a prefix of it.
      const batches: [number | null, number][] = [
        [orgA, 5],
        [orgB, 3],
        [null, 2],
        [orgA, 6],
        [orgB, 5],
        [orgA, 6],
        [null, 1],
      ];
      for (const [organization, count] of batches) {
        if (organization === null) {
          if (listing.seedWithoutOrganization) {
            unscoped.push(...(await listing.seedWithoutOrganization(kit, count)));
          }
        } else {
          const ids = await listing.seed(kit, count, organization);
          expect(ids).toHaveLength(count);
          (organization === orgA ? ofA : ofB).push(...ids);
        }
      }
      all = [...ofA, ...ofB, ...unscoped].sort((a, b) => a - b);
      api = await kit.client({ scopes: [listing.scope] });
    });
    afterAll(() => kit?.close());

    const list = async (client: ApiClient, query: string) => {
      const response = await client.get(`${listing.path}${query}`).expect(200);
      return response as typeof response & { body: { data: Item[]; pagination: Pagination } };
    };

    /** Follows `Link: rel="next"` verbatim from `query`'s first page; every id seen, in order. */
    const walk = async (client: ApiClient, query: string): Promise<number[]> => {
      const seen: number[] = [];
      let url: string | undefined = `${listing.path}${query}`;
      let pageCount = -1;
      for (let step = 1; url; step++) {
        const { body, headers } = await list(client, url.slice(listing.path.length));
        if (step === 1) pageCount = body.pagination.page_count;
        // An ascending walk in id order may link its last page to a (still) empty tail, which
        // stands after the walk's last row: in the last page, or just past it.
        if (body.data.length === 0) {
          const place = Math.floor(seen.length / body.pagination.limit) + 1;
          expect(body.pagination).toMatchObject({ current_page: place, page_count: pageCount });
          break;
        }
        // Every page it leads to tells its true place.
        expect(body.pagination).toMatchObject({ current_page: step, page_count: pageCount });
        seen.push(...idsOf(body));
        if (step > pageCount + 1)
          throw new Error(`${query}: still a next link after ${step} pages`);
        url = parseLinks(headers.link).next;
        if (url) expect(url.startsWith(`${listing.path}?`)).toBe(true);
      }
      return seen;
    };

    it('serves its definition: sort columns NOT NULL, its indexes there, the holdback times in items', async () => {
      const resource = listing.path.split('/').at(-1);
      const definition = servedListings(kit).find((d) => d.resource === resource);
      if (!definition) throw new Error(`no listing repository has the resource ${resource}`);
      expect(await listingSchemaProblems(kit, definition)).toEqual([]);
      // The holdback of tail walks reads these from the items: absent or not ISO 8601, it holds
      // nothing back, and a row committed late is skipped.
      const { body } = await list(api, '?limit=5');
      const ISO_8601 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
      for (const column of ['created_at', definition.changedAt].filter(Boolean) as string[]) {
        for (const item of body.data)
          expect({ [column]: item[column] }).toEqual({
            [column]: expect.stringMatching(ISO_8601),
          });
      }
    });

    it('answers the envelope, exactly data and pagination, page 1 of 20 rows by id by default', async () => {
      const response = await list(api, '');
      expect(response.headers['content-type']).toMatch(/^application\/json/);
      expect(Object.keys(response.body).sort()).toEqual(['data', 'pagination']);
      expect(Object.keys(response.body.pagination).sort()).toEqual([
        'current_page',
        'limit',
        'page_count',
      ]);
      expect(response.body.pagination).toEqual({
        current_page: 1,
        limit: 20,
        page_count: pages(all.length, 20),
      });
      expect(idsOf(response.body)).toEqual(all.slice(0, 20));
      expect(response.headers['x-total-count']).toBe(String(all.length));
    });

    it('gives every field the document names, typed, and null only where it is nullable', async () => {
      const item = await itemSchema(kit, listing.path);
      const fields = Object.keys(item.properties ?? {}).sort();
      expect(fields).toContain('id');
      const { body } = await list(api, '?limit=100');
      expect(idsOf(body)).toEqual(all);
      for (const row of body.data) {
        expect(Object.keys(row).sort()).toEqual(fields);
        for (const field of fields) {
          const problem = typeProblem(row[field], item.properties![field]);
          if (problem) throw new Error(`row ${row.id}: ${field} ${problem}`);
        }
      }
    });

    it('computes page_count as ceil(total / limit), echoes page and limit, sends X-Total-Count', async () => {
      const total = all.length;
      for (const limit of [1, 3, 7, total - 1, total, 100]) {
        const response = await list(api, `?limit=${limit}&page=2`);
        expect(response.body.pagination).toEqual({
          current_page: 2,
          limit,
          page_count: pages(total, limit),
        });
        expect(idsOf(response.body)).toEqual(all.slice(limit, 2 * limit));
        expect(response.headers['x-total-count']).toBe(String(total));
      }
    });

    it('fills the last page partly and answers a page past the end with 200, [] and the true page_count', async () => {
      const count = pages(all.length, 10);
      const last = await list(api, `?limit=10&page=${count}`);
      expect(idsOf(last.body)).toEqual(all.slice(10 * (count - 1)));
      for (const page of [count + 1, 2 ** 31 - 1]) {
        const past = await list(api, `?limit=10&page=${page}`);
        expect(past.body).toEqual({
          data: [],
          pagination: { current_page: page, limit: 10, page_count: count },
        });
        expect(past.headers['x-total-count']).toBe(String(all.length));
      }
    });

    it('answers page_count 0, X-Total-Count 0 and no page links when nothing matches', async () => {
      const empty = await kit.data.organization();
      const nobody = await kit.client({ scopes: [listing.scope], organizationId: empty.id });
      // A shared listing shows an organization every row: past the last id, nothing matches.
      const response = await list(nobody, listing.shared ? `?after_id=${all.at(-1)}` : '');
      expect(response.body).toEqual({
        data: [],
        pagination: { current_page: 1, limit: 20, page_count: 0 },
      });
      expect(response.headers['x-total-count']).toBe('0');
      const links = parseLinks(response.headers.link);
      // `next` may stay, as the tail of an id-ordered walk; there is no page to name.
      expect(links.first).toBeUndefined();
      expect(links.prev).toBeUndefined();
      expect(links.last).toBeUndefined();
    });

    it('sends Link first, prev, next and last, keeping the other parameters', async () => {
      const descending = [...all].reverse();
      const count = pages(all.length, 4);
      const { headers } = await list(api, '?limit=4&page=2&sort=-id');
      const links = parseLinks(headers.link);
      const params = (url: string) => {
        expect(url.startsWith(`${listing.path}?`)).toBe(true);
        return Object.fromEntries(new URL(url, 'http://x').searchParams);
      };
      expect(params(links.first)).toEqual({ limit: '4', page: '1', sort: '-id' });
      expect(params(links.prev)).toEqual({ limit: '4', page: '1', sort: '-id' });
      expect(params(links.last)).toEqual({ limit: '4', page: String(count), sort: '-id' });
      // `next` carries a cursor, keeps the request's parameters and leads to the next page.
      expect(params(links.next)).toMatchObject({ limit: '4', sort: '-id' });
      const next = await list(api, links.next.slice(listing.path.length));
      expect(next.body.pagination).toEqual({ current_page: 3, limit: 4, page_count: count });
      expect(idsOf(next.body)).toEqual(descending.slice(8, 12));

      const first = await list(api, '?limit=4&sort=-id');
      expect(parseLinks(first.headers.link).prev).toBeUndefined();
      const last = await list(api, `?limit=4&page=${count}&sort=-id`);
      expect(parseLinks(last.headers.link).next).toBeUndefined();
      expect(parseLinks(last.headers.link).prev).toBeDefined();

      // A filter is kept too (a keyset bound here, which every listing has).
      const after = all[1];
      const filtered = await list(api, `?after_id=${after}&limit=4&page=2`);
      const kept = parseLinks(filtered.headers.link);
      const rest = all.slice(2);
      expect(params(kept.first)).toEqual({ after_id: String(after), limit: '4', page: '1' });
      expect(params(kept.last)).toEqual({
        after_id: String(after),
        limit: '4',
        page: String(pages(rest.length, 4)),
      });
      expect(idsOf(filtered.body)).toEqual(rest.slice(4, 8));
      const followed = await list(api, kept.next.slice(listing.path.length));
      expect(idsOf(followed.body)).toEqual(rest.slice(8, 12));
    });

    it('exports every row as NDJSON (Accept: application/x-ndjson), each line equal to the list item', async () => {
      const page = await list(api, '?limit=100&sort=-id');
      expect(page.body.pagination.page_count).toBe(1);
      const response = await asExport(api.get(`${listing.path}?sort=-id`)).expect(200);
      expect(response.headers['content-type']).toBe('application/x-ndjson; charset=utf-8');
      const lines = String(response.body)
        .split('\n')
        .filter((line) => line !== '')
        .map((line) => JSON.parse(line) as Item);
      expect(lines).toEqual(page.body.data);
    });

    it('walks every row exactly once, in order, following Link rel="next" verbatim', async () => {
      for (const query of ['?limit=7', '?limit=7&sort=-id', '?limit=6&sort=-created_at']) {
        const sort = new URLSearchParams(query).get('sort');
        const expected = sort ? idsOf((await list(api, `?limit=100&sort=${sort}`)).body) : all;
        expect([...expected].sort((a, b) => a - b)).toEqual(all);
        const seen = await walk(api, query);
        expect(seen).toEqual(expected);
      }
    });

    it(`gives a token of one organization ${listing.shared ? 'every row' : 'its rows'}, in the page, the total and the walk`, async () => {
      for (const [organization, ofOrganization] of [
        [orgA, ofA],
        [orgB, ofB],
      ] as const) {
        const own = listing.shared ? all : ofOrganization;
        const scoped = await kit.client({ scopes: [listing.scope], organizationId: organization });
        const response = await list(scoped, '?limit=100');
        expect(idsOf(response.body)).toEqual(own);
        expect(response.headers['x-total-count']).toBe(String(own.length));
        expect(response.body.pagination.page_count).toBe(1);
        expect(await walk(scoped, '?limit=4')).toEqual(own);
      }
    });

    it('refuses bad paging, unknown and repeated parameters with a 400 problem naming each', async () => {
      const maxLimit = kit.config.pagination.maxLimit;
      const cases: [string, string[]][] = [
        ['page=0', ['page']],
        ['page=abc', ['page']],
        ['page=1.5', ['page']],
        ['page=2147483648', ['page']],
        ['limit=0', ['limit']],
        [`limit=${maxLimit + 1}`, ['limit']],
        ['limit=1e3', ['limit']],
        ['pgae=2', ['pgae']],
        ['page=1&page=2', ['page']],
        ['sort=no_such_field', ['sort']],
        ['after_id=abc', ['after_id']],
        ['page=0&limit=abc&pgae=2', ['limit', 'page', 'pgae']],
      ];
      for (const [query, parameters] of cases) {
        const response = await api.get(`${listing.path}?${query}`).expect(400);
        expect(response.headers['content-type']).toMatch(/^application\/problem\+json/);
        expect(response.body).toMatchObject({ status: 400, title: 'Bad Request' });
        const named = response.body.errors.map((error: { parameter: string }) => error.parameter);
        expect([...new Set(named)].sort()).toEqual(parameters);
      }
    });

    it('answers 401 without a token or with an unknown one', async () => {
      const missing = await kit.http().get(listing.path).expect(401);
      expect(missing.headers['www-authenticate']).toBe('Bearer realm="api"');
      expect(missing.headers['content-type']).toMatch(/^application\/problem\+json/);
      const unknown = await kit.as('lsk_thisisnotarealtoken').get(listing.path).expect(401);
      expect(unknown.headers['www-authenticate']).toBe('Bearer realm="api", error="invalid_token"');
    });

    it(`answers 403 insufficient_scope to a token without its scope`, async () => {
      const others = registeredScopes()
        .map((scope) => scope.name)
        .filter((name) => name !== listing.scope);
      const other = await kit.client({ scopes: others });
      const response = await other.get(listing.path).expect(403);
      expect(response.headers['www-authenticate']).toBe(
        `Bearer realm="api", error="insufficient_scope", scope="${listing.scope}"`,
      );
      expect(response.headers['content-type']).toMatch(/^application\/problem\+json/);
    });
  });
}

/** The schema of one item of the listing, from the app's served OpenAPI document. */
async function itemSchema(kit: TestApp, path: string): Promise<SchemaNode> {
  const { body: document } = await kit.http().get('/openapi.json').expect(200);
  const resolve = (node: SchemaNode): SchemaNode => {
    let current = node;
    while (current.$ref) {
      current = current.$ref
        .replace(/^#\//, '')
        .split('/')
        .reduce((at: Record<string, unknown>, key) => at[key] as Record<string, unknown>, document);
    }
    return current;
  };
  const page = resolve(
    document.paths[path].get.responses['200'].content['application/json'].schema,
  );
  return resolve(page.properties!.data.items!);
}

/** Why `value` does not fit `schema` (undefined when it does). */
function typeProblem(value: unknown, schema: SchemaNode): string | undefined {
  if (value === null)
    return schema.nullable ? undefined : 'is null, which the document does not allow';
  const fits: Record<string, (v: unknown) => boolean> = {
    integer: (v) => Number.isSafeInteger(v),
    number: (v) => typeof v === 'number',
    string: (v) => typeof v === 'string' && (schema.format !== 'date-time' || ISO_MS.test(v)),
    boolean: (v) => typeof v === 'boolean',
    array: (v) => Array.isArray(v),
    object: (v) => typeof v === 'object',
  };
  const check = schema.type ? fits[schema.type] : undefined;
  return check && !check(value)
    ? `is ${JSON.stringify(value)}, not a ${schema.format ?? schema.type}`
    : undefined;
}
