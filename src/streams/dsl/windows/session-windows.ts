/**
 * `SessionWindows`: records of a key less than `inactivityGap` apart belong to one session, which
 * grows (and merges with neighbours) as records come; both ends are inclusive. Their aggregation
 * (Kafka's `KStreamSessionWindowAggregate`) keeps sessions in a session store, with the stream
 * time it goes by; sessions past retention are deleted through the change-logged store.
 */
import { TopologyError } from "../../errors";
import { internal } from "../../processor";
import type { AnySupplier } from "../../topology/graph";
import type { Window, Windowed } from "../../windowed";
import { change, type Change } from "../change";
import { emitClosed, EmitStrategy, type EmitRange } from "../emit-strategy";
import { erase, processorOf, sessionStoreOf } from "../processors";
import { checkDuration, type WindowAggregation, type Windows } from "./windows";

export class SessionWindows implements Windows {
  readonly storeKind = "session";

  private constructor(
    readonly inactivityGapMs: number,
    readonly graceMs: number,
  ) {}

  static ofInactivityGapAndGrace(inactivityGapMs: number, graceMs: number): SessionWindows {
    return new SessionWindows(checkDuration("inactivity gap", inactivityGapMs, 1), checkDuration("grace", graceMs, 0));
  }

  static ofInactivityGapWithNoGrace(inactivityGapMs: number): SessionWindows {
    return SessionWindows.ofInactivityGapAndGrace(inactivityGapMs, 0);
  }

  /**
   * Stream time from which the session is final: a record up to `gap` after its end extends it,
   * and such a record is on time until stream time passes `end + gap + grace` (KAFKA-12718).
   */
  closeTime(session: Window): number {
    return session.end + this.inactivityGapMs + this.graceMs + 1;
  }

  /** Whether a record whose session would be `session` is late: stream time is past its end + gap + grace (Kafka, KAFKA-12718). */
  isLate(session: Window, streamTime: number): boolean {
    return session.end + this.inactivityGapMs + this.graceMs < streamTime;
  }

  /** As Kafka's default: gap + grace. */
  get minRetentionMs(): number {
    return this.inactivityGapMs + this.graceMs;
  }

  aggregateProcessor<K, V, VA>(aggregation: WindowAggregation<K, V, VA>): AnySupplier {
    return sessionAggregate(this, aggregation);
  }
}

/**
 * Adds each record to its key's session, as Kafka's `KStreamSessionWindowAggregate`: the record
 * merges with every session of the key the store still holds within the gap of it (Kafka's
 * `findSessions`), starting from the initializer's value and applying the merger to each, unless
 * the merged session would be late (stream time past its end + gap + grace: dropped, counted).
 * When the merged session differs from the record's own `[t, t]`, each session merged (even one
 * equal to the result) is deleted and forwarded as a tombstone first; then the merged session.
 * Results and tombstones are stamped with their session's end.
 */
function sessionAggregate<K, V, VA>(windows: SessionWindows, aggregation: WindowAggregation<K, V, VA>): AnySupplier {
  const { storeName, retentionMs, step, oldValues, merge, emit = EmitStrategy.onWindowUpdate() } = aggregation;
  if (!merge) throw new TopologyError("a session-windowed aggregation needs a merger");
  const { initializer, merger } = merge;
  // Kafka's bounds: sessions ending from the last close time emitted to before the new one.
  const range: EmitRange = (closeTime, emitted) => {
    const to = closeTime - 1;
    const from = Math.max(0, emitted ?? 0);
    return to >= 0 && to >= from ? { from, to } : undefined;
  };
  return erase(
    processorOf<K, V, Windowed<K>, Change<VA>>((record, context) => {
      if (record.key === null) return context.dropRecord("null key in an aggregation");
      const { key, timestamp } = record;
      const store = sessionStoreOf<K, VA>(context, storeName);
      const { streamTime } = store.entries.advance(timestamp);
      const gap = windows.inactivityGapMs;
      const found = store.findSessions(key, timestamp - gap, timestamp + gap);
      let aggregate = initializer();
      let merged = { start: timestamp, end: timestamp };
      for (const session of found) {
        aggregate = merger(key, aggregate, session.value);
        merged = { start: Math.min(merged.start, session.window.start), end: Math.max(merged.end, session.window.end) };
      }
      if (windows.isLate(merged, streamTime)) {
        internal(context).dropLateRecord();
      } else {
        if (merged.start !== timestamp || merged.end !== timestamp) {
          for (const { window, value } of found) {
            store.remove(key, window);
            if (!emit.onClose)
              context.forward({ ...record, key: { key, window }, value: change<VA>(null, oldValues.sending ? value : null), timestamp: window.end });
          }
        }
        const next = step(key, record.value, aggregate);
        store.put(key, merged, next);
        if (!emit.onClose) context.forward({ ...record, key: { key, window: merged }, value: change(next), timestamp: merged.end });
      }
      // Sessions close once stream time passes end + gap + grace.
      const closeTime = streamTime - windows.graceMs - gap;
      if (emit.onClose) {
        emitClosed(store.entries, closeTime, range, record.headers, (entry, headers) => {
          const { key: inner, window, value } = store.decode(entry);
          context.forward({ key: { key: inner, window }, value: change(value), timestamp: window.end, headers });
        });
      }
      // The latest session ends at stream time: retention counts from there, as in Kafka's session
      // stores; a session waiting to be emitted is kept until it is.
      const expiry = streamTime - retentionMs + 1;
      store.expireEndingBefore(emit.onClose ? Math.min(expiry, closeTime) : expiry);
    }),
  );
}
