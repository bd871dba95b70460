/**
 * One subscription's connection, kept open: `fetch` with the bearer token and `Last-Event-ID`,
 * the body read as server-sent events (client/sse.ts), and, when the connection ends or fails,
 * another after a back-off (client/backoff.ts) that resumes from the last event's id. An answer
 * no retry can change (400, 401, 403, 404, …) ends the subscription with that error. EventSource
 * is not used: it cannot send an `Authorization` header.
 */
import { backoffDelay, retryAfterMs, retryableStatus, type Backoff } from "./backoff.js";
import { SseParser, type ServerSentEvent } from "./sse.js";

type Fetch = (input: string, init: { headers: Record<string, string>; signal: AbortSignal }) => Promise<Response>;

/** How to reach the API; every subscription takes these. */
export interface ConnectionOptions {
  /** The Worker's URL, e.g. `https://streams.example.com`. Default: the page's own origin in a browser. */
  readonly baseUrl?: string;
  /** A token that may read (sent as `Authorization: Bearer`), or a function giving one for each connection. */
  readonly token?: string | (() => string | Promise<string>);
  /** Default: `globalThis.fetch`. */
  readonly fetch?: Fetch | typeof globalThis.fetch;
  /** The waits between reconnections. */
  readonly backoff?: Backoff;
  /** Aborting it closes the subscription. */
  readonly signal?: AbortSignal;
  /** Resume after this event (an id a previous subscription gave), instead of starting from a snapshot. */
  readonly lastEventId?: string;
  /**
   * A connection that brings nothing for this long (ms) is dropped and made again: the server
   * sends a keep-alive comment every 30 s, so silence means a dead connection. Default 75,000.
   */
  readonly idleTimeoutMs?: number;
}

/** Why a subscription could not go on: an HTTP answer (`status`, the API's `code`) or a failure of the connection. */
export class SubscriptionError extends Error {
  constructor(
    message: string,
    /** The HTTP status; undefined for a network failure, a dropped stream or a callback's error. */
    readonly status?: number,
    /** The API's error code (`unauthorized`, `not_found`, `invalid_input`, …), when it answered one. */
    readonly code?: string,
  ) {
    super(message);
    this.name = "SubscriptionError";
  }
}

/** What a connection reports to the subscription kind that reads it. */
export interface Protocol {
  /** A connection opened (200); `resuming`: it was asked to go on from an id. */
  opened(resuming: boolean): void;
  /** An event of it. */
  event(event: ServerSentEvent): void;
  /** A failure: `retryInMs` when another connection follows, undefined when the subscription ends. */
  failed(error: SubscriptionError, retryInMs: number | undefined): void;
}

export interface Subscription {
  /** Stops it: the connection is closed and no callback follows. */
  close(): void;
  /** The id of the last event received: give it as `lastEventId` to resume later. */
  readonly lastEventId: string | undefined;
  /** Settles when the subscription ends: undefined after `close()` (or the signal), else the error that ended it. */
  readonly finished: Promise<SubscriptionError | undefined>;
}

const DEFAULT_IDLE_TIMEOUT_MS = 75_000;

/** The request's URL: `path` under `baseUrl` (which may have a path of its own), or under the page's origin in a browser. */
export function urlOf(path: string, query: Record<string, string | number | undefined>, baseUrl: string | undefined): string {
  // The page's origin, not its address: the API's paths start at the root.
  const base = baseUrl ?? (globalThis as { location?: { origin?: string } }).location?.origin;
  if (base === undefined) throw new TypeError("edge-streams/client: give baseUrl (no page location to resolve against)");
  const url = new URL(path.replace(/^\//, ""), base.endsWith("/") ? base : `${base}/`);
  for (const [name, value] of Object.entries(query)) if (value !== undefined) url.searchParams.set(name, String(value));
  return url.toString();
}

/** The API's error body (`{"error","message"}`), or the status alone. */
async function answerError(response: Response): Promise<SubscriptionError> {
  const text = await response.text().catch(() => "");
  try {
    const body = JSON.parse(text) as { error?: unknown; message?: unknown };
    if (typeof body.message === "string") return new SubscriptionError(body.message, response.status, typeof body.error === "string" ? body.error : undefined);
  } catch {
    // Not the API's JSON (a proxy's page): the status says enough.
  }
  return new SubscriptionError(`HTTP ${response.status}${text ? `: ${text.slice(0, 200)}` : ""}`, response.status);
}

/** Opens `url` as a subscription read by `protocol`, reconnecting until closed or refused. */
export function connect(url: string, options: ConnectionOptions, protocol: Protocol): Subscription {
  const fetcher = (options.fetch ?? globalThis.fetch) as Fetch;
  const idleTimeoutMs = options.idleTimeoutMs ?? DEFAULT_IDLE_TIMEOUT_MS;
  let lastEventId = options.lastEventId;
  let stopped = false;
  let current: AbortController | undefined;
  let wake: (() => void) | undefined;
  let settle: (error: SubscriptionError | undefined) => void = () => undefined;
  const finished = new Promise<SubscriptionError | undefined>((resolve) => (settle = resolve));

  const stop = (error?: SubscriptionError) => {
    if (stopped) return;
    stopped = true;
    current?.abort();
    wake?.();
    options.signal?.removeEventListener("abort", onAbort);
    settle(error);
  };
  const onAbort = () => stop();
  if (options.signal?.aborted) stopped = true;
  else options.signal?.addEventListener("abort", onAbort);

  const sleep = (ms: number) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(() => {
        wake = undefined;
        resolve();
      }, ms);
      wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });

  /** Reads one 200 answer's events; returns whether any came. */
  const read = async (response: Response, connection: AbortController): Promise<boolean> => {
    if (!response.body) throw new SubscriptionError("the answer has no body");
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    const parser = new SseParser(lastEventId);
    let any = false;
    try {
      for (;;) {
        let onSilence: (value: "silent") => void = () => undefined;
        const silent = new Promise<"silent">((resolve) => {
          onSilence = resolve;
        });
        const timer = setTimeout(() => onSilence("silent"), idleTimeoutMs);
        const chunk = await Promise.race([reader.read(), silent]).finally(() => clearTimeout(timer));
        if (chunk === "silent") throw new SubscriptionError(`nothing received for ${idleTimeoutMs} ms`);
        if (chunk.done) return any;
        for (const event of parser.push(decoder.decode(chunk.value, { stream: true }))) {
          if (stopped || connection.signal.aborted) return any;
          // Hono's streamSSE ends a failed stream with `event: error`: the stream is over, the next connection resumes.
          if (event.event === "error") throw new SubscriptionError(`the server ended the stream: ${event.data}`);
          protocol.event(event);
          any = true;
          if (event.hasId) lastEventId = event.id;
        }
      }
    } finally {
      reader.cancel().catch(() => undefined);
    }
  };

  const run = async () => {
    let failures = 0;
    while (!stopped) {
      const connection = new AbortController();
      current = connection;
      let retryAfter: number | undefined;
      let error: SubscriptionError;
      try {
        const headers: Record<string, string> = { Accept: "text/event-stream" };
        const token = typeof options.token === "function" ? await options.token() : options.token;
        if (token) headers.Authorization = `Bearer ${token}`;
        const resuming = lastEventId !== undefined && lastEventId !== "";
        if (resuming) headers["Last-Event-ID"] = lastEventId!;
        const response = await fetcher(url, { headers, signal: connection.signal });
        if (response.status !== 200) {
          error = await answerError(response);
          if (!retryableStatus(response.status)) return stop(reportFatal(error));
          retryAfter = retryAfterMs(response.headers.get("Retry-After"));
        } else if (!/^text\/event-stream/i.test(response.headers.get("Content-Type") ?? "")) {
          response.body?.cancel().catch(() => undefined);
          return stop(reportFatal(new SubscriptionError(`not an event stream: ${response.headers.get("Content-Type")}`, 200)));
        } else {
          protocol.opened(resuming);
          if (await read(response, connection)) failures = 0;
          error = new SubscriptionError("the stream ended");
        }
      } catch (thrown) {
        if (stopped) return;
        if (thrown instanceof CallbackError) return stop(reportFatal(new SubscriptionError(`a callback failed: ${String(thrown.cause)}`)));
        error = thrown instanceof SubscriptionError ? thrown : new SubscriptionError(`the connection failed: ${String(thrown)}`);
      } finally {
        connection.abort();
      }
      if (stopped) return;
      const delay = Math.max(retryAfter ?? 0, backoffDelay(failures++, options.backoff));
      protocol.failed(error, delay);
      await sleep(delay);
    }
  };

  const reportFatal = (error: SubscriptionError) => {
    if (!stopped) protocol.failed(error, undefined);
    return error;
  };

  if (!stopped) void run();
  else settle(undefined);
  return {
    close: () => stop(),
    get lastEventId() {
      return lastEventId;
    },
    finished,
  };
}

/** An error thrown by the caller's callback: it ends the subscription (it is not the connection's fault). */
export class CallbackError extends Error {
  constructor(cause: unknown) {
    super("callback failed", { cause });
  }
}
