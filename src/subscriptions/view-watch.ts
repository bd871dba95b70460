/**
 * Watching a view that is computed, not logged: the cluster view of `GET /tasks/watch` (task
 * states, lag, restore progress; docs/http-api.md). Nothing appends to a log when a task's state
 * changes, so the stream reads the view again on a cadence and sends what differs from the last
 * view it sent. A view is a set of named parts (an instance, the summary, …), each rendered as
 * text; the first event holds them all, each later one the parts that changed and the names of
 * those gone. An event carries no id: a reconnecting subscriber gets a fresh whole view.
 *
 * The cadence: a view is read `VIEW_TICK_MS` after the previous read; after reads that found no
 * change the wait doubles up to `VIEW_IDLE_MS`, and a change brings it back to the tick (a restore
 * under way shows every second; a quiet cluster costs a read every 5 s). Nothing runs while no one
 * watches: the loop lives in the subscriber's request.
 *
 * One stream makes a bounded number of reads: a read costs the Worker's request one call per
 * instance of the page and a few more, and a request may make only so many (Cloudflare's
 * subrequest limit). Before a read that would pass `VIEW_CALLS` the stream ends, and the client
 * reconnects (after `VIEW_RETRY_MS`, which the first event tells browsers) to a fresh request and a
 * whole view.
 *
 * Platform-free: the Worker gives it the view and the stream (workers/api/routes/tasks.ts).
 */
import { KEEP_ALIVE_MS, type StreamPorts, Subscriber } from "./follow-log";

/** A view read after a change (or the first): the next read after this long. */
export const VIEW_TICK_MS = 1_000;
/** Reads that find nothing new wait longer, doubling up to this. */
export const VIEW_IDLE_MS = 5_000;

/** Calls one stream makes at most, below a Worker invocation's 1,000 subrequests (docs/scale.md). */
export const VIEW_CALLS = 900;
/** How long a browser waits before it reconnects a stream that ended (sent as `retry`). */
export const VIEW_RETRY_MS = 1_000;

/** A view: its parts by name, in order, each as the text sent for it. */
export type ViewParts = ReadonlyMap<string, string>;

/** What changed from one view to the next: the parts new or different (in the new view's order), and those gone. */
export interface ViewDiff {
  readonly changed: string[];
  readonly removed: string[];
}

/**
 * The parts of `next` that are not in `previous` or differ, and the names of `previous` gone.
 * `same` says how a part is compared (by default by its text); a part that differs only in what
 * `same` ignores is not a change.
 */
export function diffViews(previous: ViewParts, next: ViewParts, same: (name: string, a: string, b: string) => boolean = (_name, a, b) => a === b): ViewDiff {
  const changed: string[] = [];
  for (const [name, text] of next) {
    const before = previous.get(name);
    if (before === undefined || !same(name, before, text)) changed.push(name);
  }
  const removed = [...previous.keys()].filter((name) => !next.has(name));
  return { changed, removed };
}

/** The wait before the next read, after `unchanged` reads in a row that found no change. */
export function nextWait(unchanged: number): number {
  return Math.min(VIEW_IDLE_MS, VIEW_TICK_MS * 2 ** Math.min(unchanged, 16));
}

export interface ViewWatch {
  /** Reads the view now, with the calls the read made. */
  read(): Promise<{ readonly parts: ViewParts; readonly calls: number }>;
  /** The first event's data: the whole view. */
  whole(view: ViewParts, at: number): string;
  /** A later event's data: the parts changed and the names gone. */
  change(view: ViewParts, diff: ViewDiff, at: number): string;
  /** How a part compares (default: equal text). */
  same?(name: string, a: string, b: string): boolean;
}

/**
 * Sends `event: view` with the whole view, then `event: change` each time a read finds a
 * difference, until the subscriber goes away or the next read would pass `maxCalls`. A read that
 * fails ends the stream (the client reconnects and starts from a whole view again).
 */
export async function runViewWatch(watch: ViewWatch, ports: StreamPorts, maxCalls = VIEW_CALLS): Promise<void> {
  const subscriber = new Subscriber(ports);
  const first = await watch.read();
  let calls = first.calls;
  let sent = first.parts;
  await subscriber.send({ event: "view", data: watch.whole(sent, ports.now()), retry: VIEW_RETRY_MS });
  let unchanged = 0;
  while (!subscriber.closed()) {
    await ports.idle(nextWait(unchanged));
    // The next read would cost what the last one did: past the budget, end; the client comes back.
    if (subscriber.closed() || calls + first.calls > maxCalls) return;
    const read = await watch.read();
    calls += read.calls;
    const view = read.parts;
    const diff = diffViews(sent, view, watch.same?.bind(watch));
    if (diff.changed.length === 0 && diff.removed.length === 0) {
      unchanged++;
      if (ports.now() - subscriber.lastSentAt >= KEEP_ALIVE_MS) {
        await ports.keepAlive();
        subscriber.lastSentAt = ports.now();
      }
      continue;
    }
    unchanged = 0;
    await subscriber.send({ event: "change", data: watch.change(view, diff, ports.now()) });
    sent = view;
  }
}
