/**
 * When a windowed aggregation forwards its results (Kafka's `EmitStrategy`): on every update of a
 * window (the default), or once per window when it closes — when stream time passes its end plus
 * grace (sessions: end + gap + grace), the moment records for it become late — with its final
 * value. Closed windows are emitted in the order of their windows' time (window start; a
 * session's end), then key, each with its own timestamp and the headers of the record whose
 * arrival closed it. The close time emitted up to is kept in the window store, so a restored task
 * emits neither a window twice nor one late. Unlike Kafka, emission is not throttled by wall-clock
 * time (Kafka's TopologyTestDriver turns its throttle off too): results come out as they close.
 */
import type { Header } from "../record";
import type { TimeKeyedStore, TimedEntry } from "../state/time-keyed-store";

export class EmitStrategy {
  private constructor(readonly type: "ON_WINDOW_UPDATE" | "ON_WINDOW_CLOSE") {}

  /** Forward each window's aggregate whenever it changes (Kafka's default). */
  static onWindowUpdate(): EmitStrategy {
    return new EmitStrategy("ON_WINDOW_UPDATE");
  }

  /** Forward each window once, with its final aggregate, when it closes. */
  static onWindowClose(): EmitStrategy {
    return new EmitStrategy("ON_WINDOW_CLOSE");
  }

  get onClose(): boolean {
    return this.type === "ON_WINDOW_CLOSE";
  }
}

/**
 * Where the windows to emit lie, by the store's time (window start, or session end), for a close
 * time reached and the one emitted up to before (undefined: none yet); undefined when there is
 * nothing to look at. Each window kind's bounds are Kafka's.
 */
export type EmitRange = (closeTime: number, emitted: number | undefined) => { readonly from: number; readonly to: number } | undefined;

/**
 * Emits the windows of `entries` that closed since the last emission, in the store's time order,
 * and records the new close time. Nothing happens unless the close time moved forward.
 */
export function emitClosed(
  entries: TimeKeyedStore,
  closeTime: number,
  range: EmitRange,
  headers: readonly Header[],
  emit: (entry: TimedEntry, headers: readonly Header[]) => void,
): void {
  const emitted = entries.emittedCloseTime();
  if (emitted !== undefined && emitted >= closeTime) return;
  const bounds = range(closeTime, emitted);
  if (!bounds) return;
  for (const entry of entries.between(bounds.from, bounds.to)) emit(entry, headers);
  entries.markEmitted(closeTime);
}
