/**
 * What the subscriptions of one isolate did, for `GET /metrics`: events sent, recoveries by kind
 * and subscriptions refused (every slot taken, watch-slots.ts). In memory, per isolate, from the
 * isolate's start: a scrape sees the isolate that answers it, as a process's counters.
 */
import type { RecoveryKind } from "./follow-log";

export class StreamCounters {
  /** Events sent to subscribers (keep-alive comments are not events). */
  eventsSent = 0;
  /** Subscriptions refused because every slot was taken. */
  refused = 0;
  /** `snapshot`: a resume token the changelog no longer held; `resync`: a watch fell behind compaction; `gap`: a tail skipped offsets gone. */
  readonly recoveries: Record<RecoveryKind, number> = { snapshot: 0, resync: 0, gap: 0 };
}
