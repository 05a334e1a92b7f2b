import { sleep } from './services';

/** What a client saw: an HTTP status, or no reply at all. */
export type Outcome = number | 'timeout' | 'network';

export interface RequestRecord {
  /** performance.now() when the request was sent, and when its reply (or failure) ended. */
  start: number;
  end: number;
  outcome: Outcome;
  path: string;
  /** The error's code for a request without a reply. */
  error?: string;
  /** For an error status: the reply was problem+json and carried Retry-After. */
  problemJson?: boolean;
  retryAfter?: boolean;
}

export interface DataShape {
  organizations: number;
  users: number;
}

const pick = <T>(items: readonly T[]): T => items[Math.floor(Math.random() * items.length)];
const upTo = (n: number) => 1 + Math.floor(Math.random() * Math.max(1, n));

/** A mixed request of either listing: pages, filters, sorts, keyset walks. */
export function mixedPath(shape: DataShape): string {
  const users = [
    () => `/v1/users?page=${upTo(50)}`,
    () => `/v1/users?organization_id=${upTo(shape.organizations)}&sort=-created_at`,
    () => `/v1/users?role_id=${upTo(5)}&limit=50&page=${upTo(5)}`,
    () => `/v1/users?sort=name&page=${upTo(20)}`,
    () => `/v1/users?q=${pick(['an', 'el', 'ma', 'son', 'ri'])}`,
    () => `/v1/users?after_id=${upTo(shape.users)}&limit=100`,
  ];
  const activities = [
    () => `/v1/login_activities?page=${upTo(100)}`,
    () => `/v1/login_activities?success=false&sort=-created_at`,
    () => `/v1/login_activities?authentication_method=oauth&oauth_provider=google`,
    () => `/v1/login_activities?user_id=${upTo(shape.users)}`,
    () => `/v1/login_activities?created_from=2026-01-01T00:00:00.000Z&limit=100`,
    () => `/v1/login_activities?failure_reason=invalid_credentials&page=${upTo(10)}`,
  ];
  return pick(Math.random() < 0.5 ? users : activities)();
}

export interface LoadOptions {
  baseUrl: string;
  token: string;
  /** Requests in flight at most. */
  concurrency: number;
  /** Requests a second at most (0: as fast as the concurrency allows). */
  ratePerSecond: number;
  /** Client time limit of one request; past it the request counts as 'timeout'. */
  timeoutMs: number;
  shape: DataShape;
}

/**
 * A bounded load: `concurrency` workers, each sending one request at a time (paced to
 * `ratePerSecond` overall), until `stop()`. Every reply body is read to its end.
 */
export class Load {
  readonly records: RequestRecord[] = [];
  private running = false;
  private nextSlot = 0;
  private workers: Promise<void>[] = [];

  constructor(private readonly options: LoadOptions) {}

  start(): void {
    this.running = true;
    this.nextSlot = performance.now();
    for (let i = 0; i < this.options.concurrency; i++) this.workers.push(this.worker());
  }

  /** Stops sending and waits for the requests in flight. */
  async stop(): Promise<void> {
    this.running = false;
    await Promise.all(this.workers);
  }

  private async worker(): Promise<void> {
    const { ratePerSecond } = this.options;
    while (this.running) {
      if (ratePerSecond > 0) {
        const slot = Math.max(performance.now(), this.nextSlot);
        this.nextSlot = slot + 1000 / ratePerSecond;
        const wait = slot - performance.now();
        if (wait > 0) await sleep(wait);
        if (!this.running) return;
      }
      this.records.push(await this.send(mixedPath(this.options.shape)));
    }
  }

  private async send(path: string): Promise<RequestRecord> {
    const start = performance.now();
    try {
      const response = await fetch(`${this.options.baseUrl}${path}`, {
        headers: { authorization: `Bearer ${this.options.token}` },
        signal: AbortSignal.timeout(this.options.timeoutMs),
      });
      await response.arrayBuffer();
      const record: RequestRecord = {
        start,
        end: performance.now(),
        outcome: response.status,
        path,
      };
      if (response.status >= 400) {
        record.problemJson = /^application\/problem\+json/.test(
          response.headers.get('content-type') ?? '',
        );
        record.retryAfter = response.headers.has('retry-after');
      }
      return record;
    } catch (error) {
      const failure = error as Error & { cause?: { code?: string } };
      const timedOut = failure.name === 'TimeoutError';
      return {
        start,
        end: performance.now(),
        outcome: timedOut ? 'timeout' : 'network',
        path,
        error: timedOut ? 'client timeout' : (failure.cause?.code ?? failure.message),
      };
    }
  }
}

export interface PhaseSummary {
  requests: number;
  byOutcome: Record<string, number>;
  maxLatencyMs: number;
  p99LatencyMs: number;
  /** Requests that took longer than the hang limit, or got no reply before the client gave up. */
  hangs: number;
}

export function summarize(records: RequestRecord[], hangLimitMs: number): PhaseSummary {
  const byOutcome: Record<string, number> = {};
  for (const record of records) {
    const key = String(record.outcome);
    byOutcome[key] = (byOutcome[key] ?? 0) + 1;
  }
  const latencies = records.map((r) => r.end - r.start).sort((a, b) => a - b);
  return {
    requests: records.length,
    byOutcome,
    maxLatencyMs: Math.round(latencies.at(-1) ?? 0),
    p99LatencyMs: Math.round(latencies[Math.floor(latencies.length * 0.99)] ?? 0),
    hangs: records.filter((r) => r.outcome === 'timeout' || r.end - r.start > hangLimitMs).length,
  };
}

export const formatOutcomes = (byOutcome: Record<string, number>): string =>
  Object.entries(byOutcome)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([outcome, count]) => `${outcome}: ${count}`)
    .join(', ') || '-';
