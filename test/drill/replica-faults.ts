import { createConnection } from 'mysql2/promise';
import type { AppInstance } from './services';
import { sleep } from './services';

/**
 * Logins appended on the primary while a replica fault runs, as the system that writes them
 * would: `writers` connections side by side, each inserting a row and committing it up to 200 ms
 * later, so that a lower id often commits after a higher one.
 */
export class LoginWriter {
  /** The ids committed, in commit order, and when each committed (performance.now()). */
  readonly committed: number[] = [];
  readonly committedAt = new Map<number, number>();
  private running = false;
  private loops: Promise<void>[] = [];

  constructor(
    private readonly databaseUrl: string,
    private readonly writers = 2,
  ) {}

  start(): void {
    this.running = true;
    for (let i = 0; i < this.writers; i++) this.loops.push(this.loop(i));
  }

  async stop(): Promise<void> {
    this.running = false;
    await Promise.all(this.loops);
  }

  private async loop(writer: number): Promise<void> {
    const connection = await createConnection({ uri: this.databaseUrl });
    try {
      while (this.running) {
        await connection.query('BEGIN');
        const [result] = (await connection.query(
          'INSERT INTO login_activities (user_email, authentication_method, ip_address,' +
            ' otp_required, success, created_at) VALUES (?, ?, ?, 0, 1, UTC_TIMESTAMP(3))',
          [`drill-writer-${writer}@example.com`, 'password', '192.0.2.9'],
        )) as unknown as [{ insertId: number }];
        await sleep(Math.random() * 200);
        await connection.query('COMMIT');
        this.committed.push(result.insertId);
        this.committedAt.set(result.insertId, performance.now());
        await sleep(50);
      }
    } finally {
      await connection.end();
    }
  }
}

/**
 * A client following a login-activity tail walk (`Link: rel="next"` from `after_id`) through the
 * proxy, as a SIEM would: the next page at once while pages come full, else every 500 ms.
 */
export class TailFollower {
  readonly seen: number[] = [];
  /** Replies by status (or `network`), and when each id was first served (performance.now()). */
  readonly replies: Record<string, number> = {};
  readonly servedAt = new Map<number, number>();
  private running = false;
  private loop?: Promise<void>;
  private next: string;

  constructor(
    private readonly baseUrl: string,
    private readonly token: string,
    afterId: number,
  ) {
    this.next = `/v1/login_activities?after_id=${afterId}&limit=100`;
  }

  start(): void {
    this.running = true;
    this.loop = this.follow();
  }

  /** Keeps following until every id of `expected` was served, or `timeoutMs` passed. */
  async finish(expected: number[], timeoutMs: number): Promise<void> {
    const deadline = performance.now() + timeoutMs;
    while (performance.now() < deadline && expected.some((id) => !this.servedAt.has(id))) {
      await sleep(200);
    }
    this.running = false;
    await this.loop;
  }

  private async follow(): Promise<void> {
    while (this.running) {
      let full = false;
      try {
        const response = await fetch(`${this.baseUrl}${this.next}`, {
          headers: { authorization: `Bearer ${this.token}` },
          signal: AbortSignal.timeout(10_000),
        });
        this.replies[response.status] = (this.replies[response.status] ?? 0) + 1;
        if (response.status === 200) {
          const body = (await response.json()) as { data: { id: number }[] };
          for (const { id } of body.data) {
            this.seen.push(id);
            if (!this.servedAt.has(id)) this.servedAt.set(id, performance.now());
          }
          const link = response.headers.get('link') ?? '';
          const next = /<([^>]*)>; rel="next"/.exec(link)?.[1];
          if (next) this.next = next.replace(/^https?:\/\/[^/]+/, '');
          full = body.data.length === 100;
        } else {
          await response.arrayBuffer();
        }
      } catch {
        this.replies.network = (this.replies.network ?? 0) + 1;
      }
      if (!full) await sleep(500);
    }
  }
}

/** What the follower saw of the rows the writer committed. */
export interface TailOutcome {
  appended: number;
  served: number;
  missing: number;
  servedTwice: number;
  outOfOrder: number;
  replies: Record<string, number>;
  /** From a row's commit to its first serving, in seconds: the longest, for rows committed before, during and after the fault. */
  longestWaitS: Record<'before' | 'during' | 'after', number | null>;
}

export function tailOutcome(
  writer: LoginWriter,
  follower: TailFollower,
  faultStart: number,
  faultEnd: number,
): TailOutcome {
  const appended = new Set(writer.committed);
  const served = follower.seen.filter((id) => appended.has(id));
  const longest = (from: number, to: number) => {
    const waits = writer.committed
      .filter((id) => {
        const at = writer.committedAt.get(id)!;
        return at >= from && at < to;
      })
      .map((id) => (follower.servedAt.get(id) ?? NaN) - writer.committedAt.get(id)!);
    return waits.length && waits.every(Number.isFinite)
      ? Math.round(Math.max(...waits) / 100) / 10
      : null;
  };
  return {
    appended: appended.size,
    served: new Set(served).size,
    missing: writer.committed.filter((id) => !follower.servedAt.has(id)).length,
    servedTwice: served.length - new Set(served).size,
    outOfOrder: follower.seen.filter((id, i) => i > 0 && id <= follower.seen[i - 1]).length,
    replies: follower.replies,
    longestWaitS: {
      before: longest(-Infinity, faultStart),
      during: longest(faultStart, faultEnd),
      after: longest(faultEnd, Infinity),
    },
  };
}

/**
 * Each instance's view of the replica, polled from its readiness details: when it took the
 * replica out of the read rotation (and why) and when it put it back.
 */
export class RotationWatch {
  readonly changes: { instance: string; at: number; inRotation: boolean; reason?: string }[] = [];
  private readonly last = new Map<string, boolean>();
  private running = false;
  private loop?: Promise<void>;

  constructor(private readonly instances: AppInstance[]) {}

  start(): void {
    this.running = true;
    this.loop = (async () => {
      while (this.running) {
        await Promise.all(this.instances.map((instance) => this.poll(instance)));
        await sleep(200);
      }
    })();
  }

  async stop(): Promise<void> {
    this.running = false;
    await this.loop;
  }

  /** Resolves once every instance has the replica in the rotation. */
  async allIn(timeoutMs = 120_000): Promise<void> {
    const deadline = performance.now() + timeoutMs;
    while (this.instances.some((instance) => this.last.get(instance.name) !== true)) {
      if (performance.now() > deadline) throw new Error('the replica did not return to rotation');
      await sleep(100);
    }
  }

  /** Resolves once some instance has taken the replica out of the rotation. */
  async someOut(timeoutMs = 30_000): Promise<void> {
    const deadline = performance.now() + timeoutMs;
    while (this.instances.every((instance) => this.last.get(instance.name) !== false)) {
      if (performance.now() > deadline) throw new Error('no instance took the replica out');
      await sleep(100);
    }
  }

  private async poll(instance: AppInstance): Promise<void> {
    try {
      const response = await fetch(`${instance.baseUrl}/health/ready`, {
        signal: AbortSignal.timeout(2000),
      });
      const body = (await response.json()) as {
        info?: { replicas?: { replica0?: { in_rotation: boolean; reason?: string } } };
      };
      const replica = body.info?.replicas?.replica0;
      if (!replica) return;
      const previous = this.last.get(instance.name);
      this.last.set(instance.name, replica.in_rotation);
      // The first reading is where the watch starts from, not a change.
      if (previous !== undefined && previous !== replica.in_rotation) {
        this.changes.push({
          instance: instance.name,
          at: performance.now(),
          inRotation: replica.in_rotation,
          reason: replica.reason,
        });
      }
    } catch {
      // an instance not answering is the load's business, not the watch's
    }
  }
}

/** `db_queries_total` by target, summed over `instances`. */
export async function queriesByTarget(
  instances: AppInstance[],
): Promise<{ primary: number; replica: number }> {
  const totals = { primary: 0, replica: 0 };
  for (const instance of instances) {
    const text = await (await fetch(`${instance.baseUrl}/metrics`)).text();
    for (const [, target, value] of text.matchAll(
      /^db_queries_total\{target="(primary|replica)",outcome="[a-z]+"\} (\d+)/gm,
    )) {
      totals[target as 'primary' | 'replica'] += Number(value);
    }
  }
  return totals;
}
