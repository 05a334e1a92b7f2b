import { isIPv4, isIPv6 } from 'node:net';
import { HttpStatus, Logger } from '@nestjs/common';
import type { NextFunction, Request, Response } from 'express';
import onHeaders from 'on-headers';
import { hashToken, presentedToken } from '../auth/token-format';
import { sendProblem } from '../common/problem-details/problem-details.filter';
import type { TokenAuthenticator } from '../auth/token-authenticator';
import { RATE_LIMIT_WINDOW_SECONDS, RateLimits } from './rate-limits';

/**
 * Rate limits every `/v1` request before any database work (it runs ahead of routing, the bearer
 * guard and the token look-up), and announces the budget with the IETF RateLimit fields
 * (draft-ietf-httpapi-ratelimit-headers) on every reply, errors included.
 *
 * - A request with a well-formed token spends that token's budget, keyed by the token's SHA-256
 *   (the raw token is never a key); a 304 gives its request back. Anything else (no token, a malformed one: refused without a
 *   database look-up) spends the client IP's budget.
 * - A client IP whose well-formed tokens were rejected more than RATE_LIMIT_AUTH_FAILURES_PER_MINUTE
 *   times in a minute gets 429 for any token until the window ends, so guessing tokens cannot
 *   turn into a flood of database look-ups, concurrent or not; also with RATE_LIMIT_PER_MINUTE=0.
 *   A client's unknown tokens are looked up one at a time per instance (instances sharing Redis
 *   may each let one more through in a window).
 */

export function rateLimitMiddleware(
  limits: RateLimits,
  tokens: Pick<TokenAuthenticator, 'acceptsAtOnce' | 'authenticateFor' | 'shareLookUp'>,
) {
  const logger = new Logger('RateLimit');
  // Unknown tokens being checked, per client and token: concurrent requests share one check, and
  // the look-up of the request that started it (a failed one is not made again, past the limit).
  const checks = new Map<string, { wait: Promise<number>; request: Request }>();
  // Per client, its queue of look-ups of unknown tokens: the end of it, and the request whose
  // look-up failed (the database is down), which those waiting in it then share without one.
  interface Queue {
    tail: Promise<unknown>;
    failed: Promise<void>;
    failedBy?: Request;
    fail(request: Request): void;
  }
  const queues = new Map<string, Queue>();

  /**
   * Runs `task` after every earlier one of `ip`'s: one look-up of an unknown token at a time. Once
   * one fails, the others waiting go at once with it (`failedBy`): each would wait for the limit in
   * turn. Those arriving later queue afresh: the database may be back, and guesses must not pass.
   */
  const inTurn = <T>(
    ip: string,
    task: (failedBy: Request | undefined, fail: (request: Request) => void) => Promise<T>,
  ): Promise<T> => {
    let queue = queues.get(ip);
    if (!queue) {
      let release = () => {};
      const failed = new Promise<void>((resolve) => (release = resolve));
      const created: Queue = {
        tail: Promise.resolve(),
        failed,
        fail(request) {
          created.failedBy ??= request;
          release();
          if (queues.get(ip) === created) queues.delete(ip);
        },
      };
      queue = created;
      queues.set(ip, queue);
    }
    const current = queue;
    const run = Promise.race([current.tail, current.failed]).then(() =>
      task(current.failedBy, (request) => current.fail(request)),
    );
    const settled = run.catch(() => undefined);
    current.tail = settled;
    void settled.then(() => queues.get(ip)?.tail === settled && queues.delete(ip));
    return run;
  };

  /**
   * The seconds `ip` must wait for its rejected tokens (0: go on), checked, then the token looked
   * up (the guard takes the same look-up) and counted if rejected, one of `ip`'s unknown tokens at
   * a time in this instance: guesses sent at once cannot all pass a check made before any failed,
   * and a burst of valid new tokens is looked up in turn, never refused. A look-up that fails (the
   * database is down) rejects no token: the guard answers for it, and for those waiting behind it.
   */
  const checkUnknown = (request: Request, token: string, ip: string): Promise<number> =>
    inTurn(ip, async (failedBy, fail) => {
      if (failedBy) {
        tokens.shareLookUp(request, failedBy);
        return 0;
      }
      const wait = await limits.authFailureBlockSeconds(ip);
      if (wait > 0 || tokens.acceptsAtOnce(token)) return wait;
      const principal = await tokens.authenticateFor(request, token).catch(() => {
        fail(request);
        return undefined;
      });
      if (principal === null) {
        await limits.recordAuthFailure(ip).catch((error: unknown) => {
          logger.warn(`could not count a rejected token: ${String(error)}`);
        });
      }
      return 0;
    });

  const authFailureWait = (request: Request, token: string, ip: string): Promise<number> => {
    if (tokens.acceptsAtOnce(token)) return limits.authFailureBlockSeconds(ip);
    const key = `${ip} ${hashToken(token)}`;
    const check = checks.get(key);
    if (check) {
      return check.wait.finally(() => tokens.shareLookUp(request, check.request));
    }
    const wait = checkUnknown(request, token, ip).finally(() => checks.delete(key));
    checks.set(key, { wait, request });
    return wait;
  };

  // Per budget key, the give-back of a 304's request under way.
  const givingBack = new Map<string, Promise<void>>();
  // Per budget key, the 304s given back in its current window (`endsAt`).
  const givenBack = new Map<string, { endsAt: number; count: number }>();
  const freeNotModified = (key: string, endsAt: number): boolean => {
    if (givenBack.size > MAX_TRACKED_KEYS) givenBack.clear();
    const window = givenBack.get(key);
    // One window's decisions tell its end to the millisecond or so; the next ends a window later.
    const count = window && Math.abs(window.endsAt - endsAt) < 1000 ? window.count : 0;
    if (count >= limits.perMinute) return false;
    givenBack.set(key, { endsAt: count ? window!.endsAt : endsAt, count: count + 1 });
    return true;
  };

  // The token's budget, and the one a client blocked for rejected tokens has spent.
  const quotas = { default: limits.perMinute, 'auth-failures': limits.authFailuresPerMinute };
  type Budget = keyof typeof quotas;
  const policyOf = (budget: Budget) =>
    `"${budget}";q=${quotas[budget]};w=${RATE_LIMIT_WINDOW_SECONDS}`;
  const policy = policyOf('default');

  const refuse = (
    request: Request,
    response: Response,
    retryAfter: number,
    detail: string,
    budget: Budget = 'default',
  ) => {
    response.setHeader('RateLimit-Policy', policyOf(budget));
    response.setHeader('RateLimit', `"${budget}";r=0;t=${retryAfter}`);
    sendProblem(request, response, HttpStatus.TOO_MANY_REQUESTS, detail, {
      headers: { 'Retry-After': String(retryAfter) },
    });
  };

  return async (request: Request, response: Response, next: NextFunction) => {
    const token = presentedToken(request.headers.authorization);
    const ip = clientAddress(request);
    try {
      // The budget first: a token that spent it is refused before any look-up of it, once a 304's
      // request this instance is giving back to it has been (the 304 was sent before).
      const key = budgetKey(token, ip);
      await givingBack.get(key);
      const decision = limits.enabled ? await limits.consume(key) : undefined;
      if (decision) response.setHeader('RateLimit-Policy', policy);
      if (decision && !decision.allowed) {
        refuse(
          request,
          response,
          decision.resetSeconds,
          `Rate limit of ${limits.perMinute} requests a minute exceeded; retry in ${decision.resetSeconds} s.`,
        );
        return;
      }
      const blockedFor = token === null ? 0 : await authFailureWait(request, token, ip);
      if (blockedFor > 0) {
        refuse(
          request,
          response,
          blockedFor,
          `Too many rejected tokens from this client; retry in ${blockedFor} s.`,
          'auth-failures',
        );
        return;
      }
      if (decision) {
        const announce = (remaining: number) =>
          response.setHeader('RateLimit', `"default";r=${remaining};t=${decision.resetSeconds}`);
        announce(decision.remaining);
        // A 304 spends no budget (CONTRACT §3): its request is given back as its reply is sent,
        // up to a budget's worth a window per token and instance (a 304 reads its page too).
        onHeaders(response, () => {
          if (response.statusCode !== HttpStatus.NOT_MODIFIED) return;
          if (!freeNotModified(key, decision.endsAt)) return;
          announce(Math.min(limits.perMinute, decision.remaining + 1));
          const given: Promise<void> = limits
            .giveBack(key, decision)
            .catch((error: unknown) => {
              logger.warn(`could not give back a 304's request: ${String(error)}`);
            })
            .finally(() => givingBack.get(key) === given && givingBack.delete(key));
          givingBack.set(key, given);
        });
      }
    } catch (error) {
      // The counters failed (even the in-memory fallback): serve rather than refuse everyone.
      logger.warn(`rate limit not checked: ${String(error)}`);
    }
    next();
  };
}

/** Keys whose 304s given back are tracked at once: past it, the count starts again (a bound). */
const MAX_TRACKED_KEYS = 10_000;

/** Whose budget a request spends: its well-formed token's (by SHA-256), else its client's. */
export const budgetKeyOf = (request: Request): string =>
  budgetKey(presentedToken(request.headers.authorization), clientAddress(request));

const budgetKey = (token: string | null, client: string): string =>
  token === null ? `ip:${client}` : `token:${hashToken(token)}`;

const clientAddress = (request: Request) =>
  clientOf(request.ip ?? request.socket.remoteAddress ?? 'unknown');

/**
 * Whom per-IP limits count: an IPv4 address (also mapped into IPv6), or an IPv6 address's /64,
 * which one client holds whole (per-address counting let it rotate through 2^64 of them).
 */
export function clientOf(ip: string): string {
  if (isIPv4(ip)) return ip;
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip);
  if (mapped) return mapped[1];
  if (!isIPv6(ip)) return ip;
  const [head, tail] = ip.split('::');
  const groups = (part?: string) => (part ? part.split(':') : []);
  const left = groups(head);
  const right = tail === undefined ? [] : groups(tail);
  const full = [...left, ...Array<string>(8 - left.length - right.length).fill('0'), ...right];
  return `${full
    .slice(0, 4)
    .map((group) => Number.parseInt(group, 16).toString(16))
    .join(':')}::/64`;
}
