/**
 * Failed authentication, limited per client (its `CF-Connecting-IP`, which Cloudflare sets): a
 * wrong bearer token, Basic password or sign-in form is counted, and a client past
 * AUTH_FAILURE_LIMIT failures in a period is refused (429) for a period, whatever it sends, so
 * that guessing a token costs that period per AUTH_FAILURE_LIMIT tries. A request without any
 * credential is not a failure (a browser's first visit) and is never counted.
 *
 * Counting is Cloudflare's rate-limiting binding (`[[ratelimits]]` `AUTH_RATE_LIMITER` in
 * wrangler.toml, which `wrangler dev` and miniflare run too): counts shared by the isolates of a
 * Cloudflare location. The block itself is remembered by each isolate that saw the client go over
 * (a binding cannot be asked without counting). Without the binding — or while it fails — each
 * isolate counts by itself with the same limit and period (a warning is logged once): the limit
 * then holds per isolate, exactly under `wrangler dev`, which runs one.
 */
import { logEvent } from "../../src/util/logging";

/** Failed tries per client and period before it is refused; wrangler.toml's binding says the same. */
export const AUTH_FAILURE_LIMIT = 20;
/** The period, in ms (the binding takes 10 or 60 seconds). */
export const AUTH_FAILURE_PERIOD_MS = 60_000;
/** Clients remembered per isolate (blocks and the fallback's counts); the oldest go first beyond it. */
const MAX_CLIENTS = 10_000;

/** Who a request comes from, as far as the limit is concerned. */
export function clientOf(request: Request): string {
  return request.headers.get("CF-Connecting-IP") ?? "unknown";
}

/** Fixed-window counts per client in memory: the fallback without a binding, and unit-tested alone. */
export class FailureWindows {
  private readonly windows = new Map<string, { start: number; count: number }>();

  constructor(
    private readonly limit: number,
    private readonly periodMs: number,
  ) {}

  /** Counts one failure of `client`; true while it is within the limit. */
  count(client: string, now: number): boolean {
    let window = this.windows.get(client);
    if (!window || now - window.start >= this.periodMs) {
      this.windows.delete(client);
      window = { start: now, count: 0 };
      forget(this.windows);
      this.windows.set(client, window);
    }
    window.count++;
    return window.count <= this.limit;
  }
}

/** Drops the oldest entries of a map kept in insertion order, down to below MAX_CLIENTS. */
function forget(map: Map<string, unknown>): void {
  for (const key of map.keys()) {
    if (map.size < MAX_CLIENTS) return;
    map.delete(key);
  }
}

export class AuthFailures {
  /** Until when each client over the limit is refused (epoch ms). */
  private readonly blocked = new Map<string, number>();
  private readonly fallback = new FailureWindows(AUTH_FAILURE_LIMIT, AUTH_FAILURE_PERIOD_MS);
  private warned = false;

  /** Seconds the client stays refused, or 0 when it may try. */
  blockedFor(client: string, now = Date.now()): number {
    const until = this.blocked.get(client);
    if (until === undefined) return 0;
    if (until <= now) {
      this.blocked.delete(client);
      return 0;
    }
    return Math.ceil((until - now) / 1000);
  }

  /** Counts a failed try; returns the seconds the client is now refused (0 while within the limit). */
  async fail(client: string, binding: RateLimit | undefined, now = Date.now()): Promise<number> {
    if (await this.within(client, binding, now)) return 0;
    this.blocked.delete(client);
    forget(this.blocked);
    this.blocked.set(client, now + AUTH_FAILURE_PERIOD_MS);
    logEvent("http.auth_blocked", { client, seconds: AUTH_FAILURE_PERIOD_MS / 1000 }, "warn");
    return AUTH_FAILURE_PERIOD_MS / 1000;
  }

  private async within(client: string, binding: RateLimit | undefined, now: number): Promise<boolean> {
    if (binding) {
      try {
        return (await binding.limit({ key: `auth-failure:${client}` })).success;
      } catch (error) {
        this.warn(`the rate-limiting binding failed (${error instanceof Error ? error.message : String(error)}): counting in this isolate`);
      }
    } else {
      this.warn("no AUTH_RATE_LIMITER binding: failed authentication is counted in each isolate alone");
    }
    return this.fallback.count(client, now);
  }

  private warn(message: string): void {
    if (this.warned) return;
    this.warned = true;
    logEvent("http.auth_limit_degraded", { message }, "warn");
  }
}

/** One per isolate: what it remembers of clients is shared by every request it serves. */
export const authFailures = new AuthFailures();
