import type { INestApplication } from '@nestjs/common';
import { DocumentBuilder, OpenAPIObject, SwaggerModule } from '@nestjs/swagger';
import type {
  HeaderObject,
  OperationObject,
  ReferenceObject,
  ResponseObject,
  SchemaObject,
} from '@nestjs/swagger/dist/interfaces/open-api-spec.interface';
import { registeredScopes } from '../common/auth/scope-registry';
import { byCodePoint } from '../common/by-code-point';
import { ProblemView } from '../common/problem-details/problem.view';

/** The version of the HTTP contract (the `/v1` routes), not of the package. */
export const API_VERSION = '1.0.0';

export const BEARER_SCHEME = 'bearer';

/** The page size bounds of the configuration the document describes. */
export interface PageLimits {
  defaultLimit: number;
  maxLimit: number;
}

const apiDescription = ({
  defaultLimit,
  maxLimit,
}: PageLimits) => `Read-only, paginated listings of the platform's records, one \`GET\` operation each.

## Authentication
Every \`/v1\` route needs \`Authorization: Bearer <token>\`. Tokens (\`lsk_\` + 43 characters) are
issued by the service's token CLI, carry scopes and may be limited to one organization: such a
token only ever sees that organization's rows, whatever filters it sends. Each operation names the
scope it needs (\`x-required-scopes\`). A missing token answers 401 with
\`WWW-Authenticate: Bearer realm="api"\`; a malformed, unknown, expired or revoked one 401 with
\`error="invalid_token"\`; a token without the route's scope 403 with \`error="insufficient_scope"\`.

## Pagination
Lists answer \`{ "data": [...], "pagination": { "current_page", "limit", "page_count" } }\`.
\`page\` starts at 1; \`limit\` is 1..${maxLimit} (default ${defaultLimit}). \`page_count\` is \`ceil(total / limit)\` for
the request's filters, 0 when nothing matches; a page past the end answers 200 with \`data: []\`.
\`X-Total-Count\` carries the total and an RFC 8288 \`Link\` header the \`first\`, \`prev\`, \`next\`
and \`last\` pages, keeping every other parameter. The default order is \`id\` ascending, stable while
rows are appended; every \`sort\` breaks ties on \`id\` in the same direction.

## Walking and exporting
To walk a collection, follow \`Link: rel="next"\` as given: it carries an opaque \`cursor\` (a keyset
position on the sort column and \`id\`, signed and bound to the filters, sort and token scope it was
made for; a changed or foreign one answers 400 naming \`cursor\`). Every matching row comes once, in
order, at the same cost at any depth; \`first\`, \`prev\` and \`last\` stay page numbers. A row whose
sort key changes during the walk (\`sort=updated_at\`) may come again later in it; no other row is
skipped or repeated. \`after_id\` (\`0\`: from the start, with \`sort=id\`) and \`before_id\` (with
\`sort=-id\`) keep only the ids past a bound.

**Tail polling.** On an ascending walk in \`id\` order, or in the order rows change (users'
\`sort=updated_at\`), the last page, even an empty one, has a \`next\` link: following it later
returns the rows appended (or changed) since, until a window on that column (\`created_to\`,
\`updated_to\`) has closed. Rows written, or in \`id\` order first seen, in the last few
seconds (TAIL_HOLDBACK_MS, 5 s by default) are held back from such walks and their exports, so that
a write committed up to that late is never skipped (one committed later may be). A change dated ahead
comes when its time has. A change feed does not report deleted rows, nor rows that left its filter.

**Export.** \`Accept: application/x-ndjson\` streams every matching row, one item per line (same
filters, sort and scope; \`page\` refused, \`limit\` caps the rows). A stream that fails midway ends
without its final chunk (a truncated transfer). An export spends one request of rate-limit budget
per 1,000 rows (EXPORT_ROWS_PER_REQUEST); once the budget is spent, the stream pauses until the next
window.

**Compression.** JSON and NDJSON replies over 1 KB are sent gzip- or br-encoded as
\`Accept-Encoding\` asks. ETags are weak, the same for every encoding.

**Totals may be a few seconds old.** Counting a large filtered set is the expensive part of a page,
so the total (\`X-Total-Count\`, hence \`page_count\`) for the same filters and token scope is
reused for a short while (10 s by default) and then advanced by the rows appended since; deleted
rows leave it at the next full recount (every 10 minutes by default). Walk by \`next\` rather than
trusting \`page_count\` for an exact end.

## Errors
Every error is RFC 9457 problem details (\`application/problem+json\`). Any bad query parameter
(wrong type, out of range, repeated, unknown, an unknown \`sort\` or filter value) answers 400 with
an \`errors\` list naming every offending parameter. Other methods than GET/HEAD answer 405 with
\`Allow: GET, HEAD\`; unknown paths 404; a client accepting neither JSON nor NDJSON 406 (after the
token is checked); a request with a body over 1 kB, or of unknown length (chunked), 413. A
request line and headers beyond 16 KiB or 100 fields answer 431, and a request that is not valid
HTTP (raw non-ASCII characters in the URL, say) or carries two \`Authorization\` headers 400,
before any route and without RateLimit headers.

## Limits
Each token has a request budget per minute, announced on every \`/v1\` reply by the IETF
RateLimit header fields (\`RateLimit-Policy\`, \`RateLimit\`); over it, 429 with \`Retry-After\`.
Every query runs under a time limit; a database that is down or too slow answers 503 with
\`Retry-After\`, and so does an ascending id walk (MySQL/MariaDB) in the first TAIL_HOLDBACK_MS
after a start, until the newest ids have settled.

## Caching
List replies carry a weak \`ETag\` and \`Cache-Control: private, no-cache\`; send the ETag back in
\`If-None-Match\` to get 304 Not Modified when nothing changed, whatever \`Cache-Control\` the request
carries. A 304 spends no rate-limit budget: its request is given back, for as many 304s a minute
as the budget holds (each reads its page); past them, a 304 spends a request.

Every reply carries \`X-Request-Id\` (yours when you send a sane one, else a new UUID); quote it
when reporting a problem.`;

/**
 * The OpenAPI document of the app: what the decorators say, plus the conventions every route shares
 * (error replies, headers, scopes), added here once so that a new module gets them for free. The
 * page size bounds are the configuration's (`pageLimits`), which decorators cannot know.
 */
export function buildOpenApiDocument(app: INestApplication, pageLimits: PageLimits): OpenAPIObject {
  const config = new DocumentBuilder()
    .setTitle('Listing service')
    .setDescription(apiDescription(pageLimits))
    .setVersion(API_VERSION)
    .addServer('/', 'This server')
    .addBearerAuth(
      { type: 'http', scheme: 'bearer', bearerFormat: 'lsk_…', description: scopesDescription() },
      BEARER_SCHEME,
    )
    .build();
  const document = SwaggerModule.createDocument(app, config, {
    extraModels: [ProblemView],
    operationIdFactory: (controllerKey, methodKey) =>
      `${methodKey}${controllerKey.replace(/Controller$/, '')}`,
  });
  return completeDocument(document, pageLimits);
}

function scopesDescription(): string {
  const lines = registeredScopes().map((scope) => `- \`${scope.name}\`: ${scope.description}`);
  return `An opaque API token: \`lsk_\` followed by 43 base64url characters. Scopes:\n${lines.join('\n')}`;
}

const header = (description: string, schema: SchemaObject, required = false): HeaderObject => ({
  description,
  required,
  schema,
});

/** Headers shared by many replies; the required ones referenced as `#/components/headers/<name>`. */
export const SHARED_HEADERS: Record<string, HeaderObject> = {
  'X-Request-Id': header(
    'The request id: echoed from the request when it is 1 to 128 of `A-Za-z0-9._:-`, else a new UUID.',
    { type: 'string', pattern: '^[A-Za-z0-9._:-]{1,128}$' },
    true,
  ),
  'RateLimit-Policy': header(
    'IETF httpapi RateLimit policy of the token, e.g. `"default";q=600;w=60` (quota per window of seconds); `"auth-failures"` on the 429 of a client that sent too many rejected tokens. Absent when rate limiting is switched off.',
    { type: 'string', pattern: '^"[A-Za-z0-9_-]+";q=\\d+;w=\\d+$' },
  ),
  RateLimit: header(
    'IETF httpapi RateLimit state, e.g. `"default";r=599;t=42` (requests remaining, seconds until the window resets). Absent when rate limiting is switched off.',
    { type: 'string', pattern: '^"[A-Za-z0-9_-]+";r=\\d+;t=\\d+$' },
  ),
  'Retry-After': header('Seconds to wait before retrying.', { type: 'integer', minimum: 0 }, true),
  'WWW-Authenticate': header(
    'RFC 6750 challenge: `Bearer realm="api"`, with `error="invalid_token"` or `error="insufficient_scope", scope="…"`.',
    { type: 'string', pattern: '^Bearer realm="api"' },
    true,
  ),
  Allow: header('The methods this path accepts.', { type: 'string', enum: ['GET, HEAD'] }, true),
};

const ref = (section: string, name: string): ReferenceObject => ({
  $ref: `#/components/${section}/${name}`,
});

interface SharedResponse {
  name: string;
  description: string;
  headers: string[];
  /** Answered as Node's HTTP server parses the request, before any route: no RateLimit headers. */
  beforeRoutes?: boolean;
}

/** The error replies of every `/v1` operation, as `#/components/responses/<name>`. */
const PROBLEM_RESPONSES: Record<string, SharedResponse> = {
  '400': {
    name: 'BadRequest',
    description:
      'A query parameter is invalid, repeated or unknown; `errors` names every offending one.',
    headers: [],
  },
  '401': {
    name: 'Unauthorized',
    description: 'The bearer token is missing, malformed, unknown, expired or revoked.',
    headers: ['WWW-Authenticate'],
  },
  '403': {
    name: 'Forbidden',
    description: 'The token lacks the scope this route needs (`error="insufficient_scope"`).',
    headers: ['WWW-Authenticate'],
  },
  '404': {
    name: 'NotFound',
    description: 'No resource lives at this path (e.g. a mistyped or deeper path).',
    headers: [],
  },
  '405': {
    name: 'MethodNotAllowed',
    description:
      'Any method other than GET or HEAD on this path: the service is read-only. (Listed under GET because OpenAPI has no place for the methods a path does not support.)',
    headers: ['Allow'],
  },
  '413': {
    name: 'ContentTooLarge',
    description:
      'The request has a body over 1 kB, or of unknown length (chunked): no route of this service takes one.',
    headers: [],
  },
  '406': {
    name: 'NotAcceptable',
    description: 'The `Accept` header allows neither application/json nor application/x-ndjson.',
    headers: [],
  },
  '429': {
    name: 'TooManyRequests',
    description: 'The token exceeded its rate limit; retry after `Retry-After` seconds.',
    headers: ['Retry-After'],
  },
  '431': {
    name: 'RequestHeaderFieldsTooLarge',
    description:
      'The request line and headers exceed 16 KiB, or the headers 100 fields. Answered before any route or rate limit: no RateLimit headers.',
    headers: [],
    beforeRoutes: true,
  },
  '500': {
    name: 'InternalServerError',
    description: 'An unexpected error; the body reveals no internals. Quote the request id.',
    headers: [],
  },
  '503': {
    name: 'ServiceUnavailable',
    description:
      'The database is unreachable or too slow right now, or (MySQL/MariaDB) an ascending id walk just after a start, until the newest ids have settled (TAIL_HOLDBACK_MS); retry later.',
    headers: ['Retry-After'],
  },
};

const isVersioned = (path: string) => /^\/v\d+\//.test(path);

function completeDocument(document: OpenAPIObject, pageLimits: PageLimits): OpenAPIObject {
  const components = (document.components ??= {});
  const schemas = (components.schemas ??= {});
  for (const schema of Object.values(schemas)) completeSchema(schema);

  const rateLimitHeaders = ['RateLimit-Policy', 'RateLimit'];
  components.headers = Object.fromEntries(
    Object.entries(SHARED_HEADERS).filter(([, header]) => header.required),
  );
  const problemResponses: Record<string, ResponseObject> = {};
  for (const problem of Object.values(PROBLEM_RESPONSES)) {
    const limits = problem.beforeRoutes ? [] : rateLimitHeaders;
    problemResponses[problem.name] = {
      description: problem.description,
      headers: headerRefs(['X-Request-Id', ...limits, ...problem.headers]),
      content: { 'application/problem+json': { schema: ref('schemas', 'ProblemView') } },
    };
  }
  components.responses = { ...components.responses, ...problemResponses };

  for (const [path, item] of Object.entries(document.paths)) {
    for (const operation of Object.values(item) as OperationObject[]) {
      if (!operation || typeof operation !== 'object' || !('responses' in operation)) continue;
      const versioned = isVersioned(path);
      for (const response of Object.values(operation.responses) as ResponseObject[]) {
        if ('$ref' in response) continue;
        response.headers = {
          ...headerRefs(['X-Request-Id', ...(versioned ? rateLimitHeaders : [])]),
          ...response.headers,
        };
      }
      if (!versioned) continue;
      applyPageLimits(operation, pageLimits);
      for (const [status, problem] of Object.entries(PROBLEM_RESPONSES)) {
        operation.responses[status] = ref('responses', problem.name);
      }
      operation.responses = sortByKey(operation.responses);
      const scopes = (operation as unknown as Record<string, unknown>)['x-required-scopes'];
      if (Array.isArray(scopes) && scopes.length) {
        const note = `Needs a bearer token with the scope ${scopes.map((s) => `\`${s}\``).join(' and ')}.`;
        operation.description = operation.description
          ? `${operation.description}\n\n${note}`
          : note;
      }
    }
  }
  return document;
}

/** The `limit` query parameter's bounds and default, as configured. */
function applyPageLimits(operation: OperationObject, { defaultLimit, maxLimit }: PageLimits): void {
  for (const parameter of operation.parameters ?? []) {
    if ('$ref' in parameter || parameter.in !== 'query' || parameter.name !== 'limit') continue;
    const schema = parameter.schema as SchemaObject | undefined;
    if (!schema || '$ref' in schema) continue;
    schema.maximum = maxLimit;
    schema.default = defaultLimit;
  }
}

/**
 * Shared headers by name: required ones referenced, optional ones inline, since generated clients
 * (openapi-typescript) take a referenced header as required whatever it says.
 */
function headerRefs(names: string[]): Record<string, ReferenceObject | HeaderObject> {
  return Object.fromEntries(
    names.map((name) => [
      name,
      SHARED_HEADERS[name].required ? ref('headers', name) : SHARED_HEADERS[name],
    ]),
  );
}

/**
 * OpenAPI 3.0 only lets `null` through an enum when the enum lists it: a nullable enum gets `null`
 * added, so that validators and generated clients agree with the replies.
 */
function completeSchema(schema: SchemaObject | ReferenceObject): void {
  if ('$ref' in schema) return;
  if (schema.nullable && Array.isArray(schema.enum) && !schema.enum.includes(null)) {
    schema.enum = [...schema.enum, null];
  }
  for (const property of Object.values(schema.properties ?? {})) completeSchema(property);
  if (schema.items) completeSchema(schema.items);
}

function sortByKey<T>(record: Record<string, T>): Record<string, T> {
  return Object.fromEntries(Object.entries(record).sort(([a], [b]) => byCodePoint(a, b)));
}
