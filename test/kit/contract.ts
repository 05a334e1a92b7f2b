import type { OpenAPIObject } from '@nestjs/swagger';
import Ajv, { ErrorObject, ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import { readFileSync } from 'node:fs';
import { METHODS } from 'node:http';
import { join } from 'node:path';
import type TestAgent from 'supertest/lib/agent';

/** The checked-in document every e2e reply is held to. */
export const CHECKED_IN_OPENAPI = join(__dirname, '..', '..', 'openapi.json');

/** One request and its reply, as the validator sees it (from supertest or from fetch). */
export interface Exchange {
  method: string;
  /** Path and query, e.g. `/v1/users?limit=2`. */
  url: string;
  status: number;
  /** Header names in lower case. */
  headers: Record<string, string | string[] | undefined>;
  /** The raw body text ('' when none). */
  text: string;
}

export class ContractViolation extends Error {
  override name = 'ContractViolation';
}

interface HeaderSpec {
  required?: boolean;
  schema?: { type?: string; enum?: unknown[]; minimum?: number; pattern?: string };
}
interface ResponseSpec {
  headers?: Record<string, HeaderSpec | { $ref: string }>;
  content?: Record<string, { schema?: object }>;
}
type OperationSpec = { responses: Record<string, ResponseSpec | { $ref: string }> };

/** Paths outside the versioned API that the document leaves out on purpose (in any case, as routed). */
const UNDOCUMENTED_OPERATIONAL_PATHS = [
  /^\/health(\/|$)/i,
  /^\/metrics$/i,
  /^\/docs(\/|$)/i,
  /^\/docs-json$/i,
  /^\/openapi\.json$/i,
];
/** What a method a path does not support may answer: 405, or a refusal that comes before it. */
const REFUSALS_OF_OTHER_METHODS = new Set([405, 413, 429, 431, 500, 503]);
const JSON_MEDIA_TYPE = /^application\/(?:[\w.-]+\+)?json$/;
const DOCUMENT_ID = 'openapi.json';

/**
 * Holds replies to the OpenAPI document: the status must be documented for the route, the
 * documented headers present and well-formed, the content type documented and the body valid
 * against its schema. Objects are checked strictly (no member the document does not name), so a
 * field added, renamed, retyped or made nullable in code without the document fails here.
 */
export class ContractValidator {
  private readonly ajv: Ajv;
  private readonly routes: { pattern: RegExp; path: string; item: Record<string, OperationSpec> }[];
  private readonly compiled = new Map<string, ValidateFunction>();
  /** Status → `#/components/responses/…` of the replies every operation shares (errors). */
  private readonly sharedResponses = new Map<string, string>();

  constructor(private readonly document: OpenAPIObject) {
    this.ajv = new Ajv({ strict: false, allErrors: true, verbose: true });
    addFormats(this.ajv);
    const strictSchemas = closeObjects(structuredClone(document.components?.schemas ?? {}));
    this.ajv.addSchema({ $id: DOCUMENT_ID, components: { schemas: strictSchemas } });
    this.routes = Object.entries(document.paths).map(([path, item]) => ({
      path,
      pattern: new RegExp(
        `^${path.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\\?\{[^}]+\\?\}/g, '[^/]+')}/?$`,
      ),
      item: item as unknown as Record<string, OperationSpec>,
    }));
    for (const route of this.routes) {
      for (const operation of Object.values(route.item)) {
        for (const [status, response] of Object.entries(operation?.responses ?? {})) {
          const target = (response as { $ref?: string }).$ref;
          if (target?.startsWith('#/components/responses/') && !this.sharedResponses.has(status)) {
            this.sharedResponses.set(status, target);
          }
        }
      }
    }
  }

  /** The checked-in openapi.json, read once per test file. */
  static checkedIn(): ContractValidator {
    checkedIn ??= new ContractValidator(JSON.parse(readFileSync(CHECKED_IN_OPENAPI, 'utf8')));
    return checkedIn;
  }

  /**
   * The checked-in document plus what `live` (the running app's own document) adds on top: routes
   * and schemas of modules that only a test registers. What the checked-in file has always wins.
   */
  extendedWith(live: OpenAPIObject): ContractValidator {
    const merged: OpenAPIObject = structuredClone(this.document);
    merged.paths = { ...live.paths, ...merged.paths };
    merged.components = {
      ...merged.components,
      schemas: { ...live.components?.schemas, ...merged.components?.schemas },
    };
    return new ContractValidator(merged);
  }

  /** Every way the exchange departs from the document (empty when it conforms). */
  check(exchange: Exchange): string[] {
    const method = exchange.method.toUpperCase();
    const path = exchange.url.split('?', 1)[0];
    if (method === 'OPTIONS') return []; // CORS preflight: not part of the contract
    const route = this.routes.find((candidate) => candidate.pattern.test(path));
    if (!route) {
      // The operational endpoints (health, metrics, docs) are left out of the document on purpose.
      if (UNDOCUMENTED_OPERATIONAL_PATHS.some((pattern) => pattern.test(path))) return [];
      // Unknown paths (and requests refused before routing) answer one of the shared replies.
      const shared = this.sharedResponses.get(String(exchange.status));
      if (shared) {
        return this.checkResponse(exchange, this.resolve({ $ref: shared }) as ResponseSpec, shared);
      }
      return [
        `${shorten(path)} is not in the document, yet it answered ${exchange.status} (an unknown path may only give a shared reply: ${[...this.sharedResponses.keys()].join(', ')})`,
      ];
    }
    const operation =
      route.item[method.toLowerCase()] ?? (method === 'HEAD' ? route.item.get : undefined);
    // Methods a path does not support get the error replies of its GET operation (405 first).
    const operationName = operation
      ? `paths["${route.path}"].${method === 'HEAD' && !route.item.head ? 'get' : method.toLowerCase()}`
      : `paths["${route.path}"].get`;
    const responses = (operation ?? route.item.get)?.responses ?? {};
    if (!operation && !REFUSALS_OF_OTHER_METHODS.has(exchange.status)) {
      return [
        `${method} is not documented for ${route.path}, so it must answer 405, not ${exchange.status}`,
      ];
    }
    const key = [String(exchange.status), `${String(exchange.status)[0]}XX`, 'default'].find(
      (candidate) => candidate in responses,
    );
    if (!key) {
      return [
        `status ${exchange.status} is not documented for ${operationName} (documented: ${Object.keys(responses).join(', ')})`,
      ];
    }
    return this.checkResponse(
      exchange,
      this.resolve(responses[key]) as ResponseSpec,
      `${operationName}.responses["${key}"]`,
    );
  }

  /** Throws a ContractViolation naming the route, the status and every problem. */
  assert(exchange: Exchange): void {
    const problems = this.check(exchange);
    if (problems.length === 0) return;
    throw new ContractViolation(
      [
        `Reply does not match openapi.json: ${exchange.method.toUpperCase()} ${shorten(exchange.url)} → ${exchange.status}`,
        ...problems.map((problem) => `  - ${problem}`),
        'Fix the code, or if the change is intended, update the decorators and run `npm run openapi`.',
      ].join('\n'),
    );
  }

  private checkResponse(exchange: Exchange, response: ResponseSpec, where: string): string[] {
    const problems: string[] = [];
    for (const [name, raw] of Object.entries(response.headers ?? {})) {
      const spec = this.resolve(raw) as HeaderSpec;
      const value = exchange.headers[name.toLowerCase()];
      if (value === undefined) {
        if (spec.required) problems.push(`header ${name} is required by ${where} but missing`);
        continue;
      }
      const problem = checkHeaderValue(String(value), spec);
      if (problem) problems.push(`header ${name}: ${problem} (${where}.headers["${name}"])`);
    }

    const contentType = String(exchange.headers['content-type'] ?? '')
      .split(';', 1)[0]
      .trim();
    const bodyless = exchange.method.toUpperCase() === 'HEAD' || exchange.status === 304;
    if (!response.content) {
      if (exchange.text && !bodyless)
        problems.push(`${where} documents no body, yet one was sent (${contentType})`);
      return problems;
    }
    const mediaTypes = Object.keys(response.content);
    if (!mediaTypes.includes(contentType)) {
      problems.push(
        `content type "${contentType}" is not documented for ${where} (documented: ${mediaTypes.join(', ')})`,
      );
      return problems;
    }
    const schema = response.content[contentType].schema;
    if (bodyless || !schema || !JSON_MEDIA_TYPE.test(contentType)) return problems;
    let body: unknown;
    try {
      body = JSON.parse(exchange.text);
    } catch {
      return [...problems, `body is not valid JSON: ${exchange.text.slice(0, 200)}`];
    }
    const validate = this.validatorFor(schema);
    if (!validate(body)) {
      const schemaName =
        '$ref' in schema ? String(schema.$ref) : `${where}.content["${contentType}"].schema`;
      problems.push(...describeSchemaErrors(validate.errors ?? [], schemaName));
    }
    if (
      contentType === 'application/problem+json' &&
      (body as { status?: unknown }).status !== exchange.status
    ) {
      problems.push(
        `problem body status ${(body as { status?: unknown }).status} differs from the HTTP status`,
      );
    }
    return problems;
  }

  private validatorFor(schema: object): ValidateFunction {
    const key = JSON.stringify(schema);
    let validate = this.compiled.get(key);
    if (!validate) {
      const rooted = JSON.parse(key.replaceAll('"#/components/', `"${DOCUMENT_ID}#/components/`));
      validate = this.ajv.compile(rooted);
      this.compiled.set(key, validate);
    }
    return validate;
  }

  private resolve(value: object): object {
    let current = value as { $ref?: string };
    for (let depth = 0; depth < 5 && typeof current.$ref === 'string'; depth++) {
      const pointer = current.$ref.replace(/^#\//, '').split('/');
      current = pointer.reduce<Record<string, unknown>>(
        (node, part) =>
          node?.[part.replace(/~1/g, '/').replace(/~0/g, '~')] as Record<string, unknown>,
        this.document as unknown as Record<string, unknown>,
      );
      if (!current)
        throw new Error(`openapi.json: unresolvable $ref ${value as unknown as string}`);
    }
    return current;
  }
}

let checkedIn: ContractValidator | undefined;

const shorten = (text: string, max = 200) =>
  text.length > max ? `${text.slice(0, max)}… (${text.length} characters)` : text;

function checkHeaderValue(value: string, spec: HeaderSpec): string | undefined {
  const schema = spec.schema ?? {};
  if (schema.enum && !schema.enum.includes(value)) {
    return `"${value}" is not one of ${schema.enum.map((v) => JSON.stringify(v)).join(', ')}`;
  }
  if (schema.pattern && !new RegExp(schema.pattern).test(value)) {
    return `"${value}" does not match ${schema.pattern}`;
  }
  if (schema.type === 'integer') {
    if (!/^\d+$/.test(value)) return `"${value}" is not an integer`;
    if (schema.minimum !== undefined && Number(value) < schema.minimum) {
      return `${value} is below the minimum ${schema.minimum}`;
    }
  }
  return undefined;
}

/**
 * One line per distinct failure (the same rule broken by every item of a page is one line, with
 * the count), each naming where in the body, what, the value and the schema rule.
 */
function describeSchemaErrors(errors: ErrorObject[], schemaName: string): string[] {
  const groups = new Map<string, { first: ErrorObject; count: number }>();
  for (const error of errors) {
    const key = `${error.instancePath.replace(/\/\d+(?=\/|$)/g, '/*')}|${error.schemaPath}|${error.message}`;
    const group = groups.get(key);
    if (group) group.count += 1;
    else groups.set(key, { first: error, count: 1 });
  }
  return [...groups.values()].map(({ first, count }) => {
    const where = `body${first.instancePath || ''}`;
    const value = JSON.stringify(first.data);
    const shown =
      value === undefined || first.keyword === 'additionalProperties'
        ? ''
        : ` (got ${value.length > 80 ? `${value.slice(0, 80)}…` : value})`;
    const detail =
      first.keyword === 'additionalProperties'
        ? `has "${(first.params as { additionalProperty: string }).additionalProperty}", which the document does not name`
        : first.message;
    const more = count > 1 ? `, and ${count - 1} more like it` : '';
    // A rule inside a referenced schema is named by its own path; else relative to the reply's.
    const rule = first.schemaPath.startsWith('#/components/')
      ? first.schemaPath
      : `${schemaName}${first.schemaPath.slice(1)}`;
    return `${where} ${detail}${shown}${more} [schema ${rule.replace(`${DOCUMENT_ID}#`, '#')}]`;
  });
}

/** Objects with named properties admit no other member, unless the document says otherwise. */
function closeObjects<T>(node: T): T {
  if (Array.isArray(node)) {
    node.forEach(closeObjects);
  } else if (node && typeof node === 'object') {
    const schema = node as Record<string, unknown>;
    if (schema.properties && schema.additionalProperties === undefined) {
      schema.additionalProperties = false;
    }
    Object.values(schema).forEach(closeObjects);
  }
  return node;
}

const HTTP_METHODS = new Set(METHODS.map((method) => method.toLowerCase()));

/**
 * A supertest agent whose every request is held to the contract: each `kit.http().get(…)` (and
 * any other method) gets an extra expectation that runs when the reply arrives, before the test's
 * own ones.
 */
export function contractCheckedAgent(agent: TestAgent, contract: ContractValidator): TestAgent {
  return new Proxy(agent, {
    get(target, property, receiver) {
      const value: unknown = Reflect.get(target, property, receiver);
      if (typeof property !== 'string' || typeof value !== 'function') return value;
      if (!HTTP_METHODS.has(property) && property !== 'del') return value.bind(target);
      return (url: string, ...rest: unknown[]) => {
        const test = value.call(target, url, ...rest) as ReturnType<TestAgent['get']>;
        const method = property === 'del' ? 'DELETE' : property.toUpperCase();
        // `.expect(status)` failing shows the reply's body (a problem's detail), not only its status.
        const originalExpect = test.expect.bind(test) as (...args: unknown[]) => typeof test;
        test.expect = ((...args: unknown[]) => {
          if (args.length !== 1 || typeof args[0] !== 'number') return originalExpect(...args);
          const status = args[0];
          return originalExpect((res?: { status: number; text?: string; body?: unknown }) => {
            if (!res) throw new Error(`expected ${status}, got no reply`);
            if (res.status !== status) {
              throw new Error(
                `expected ${status}, got ${res.status}: ${replyText(res).slice(0, 2000)}`,
              );
            }
          });
        }) as typeof test.expect;
        return test.expect((res) => {
          if (!res) return; // no reply at all (aborted, refused): nothing to hold to the contract
          contract.assert({
            method,
            url,
            status: res.status,
            headers: res.headers as Record<string, string>,
            text: replyText(res),
          });
        });
      };
    },
  });
}

/** A reply's body as text: supertest's `text`, or the body a text parser (`asExport`) gave. */
const replyText = (res: { text?: string; body?: unknown }): string =>
  res.text ?? (typeof res.body === 'string' ? res.body : '');
