/**
 * Windowed stream-stream joins (inner, left, outer). Each side's records are buffered in a
 * change-logged buffer store (`TimeKeyedStore`: key, timestamp, sequence number) for as long as a
 * record of the other side could still join them; a record joins every buffered record of the
 * other side with the same key within the time difference. Both processors use both stores, so
 * the two streams share a subtopology (co-partitioning is checked by the build).
 *
 * Outer results (a record with no partner, joined with null) are emitted only once the record can
 * no longer find a partner, never speculatively: when stream time passes `t + 2·difference + grace`
 * (a partner at `t + difference` is on time until `t + 2·difference + grace`). Each buffered value
 * carries a flag saying whether it found a partner; that is what decides, on expiry.
 * Stream time is shared by the two sides: the largest of the two stores' recorded stream times.
 */
import { TopologyError } from "../errors";
import { internal } from "../processor";
import { serdeOrDefault, type Serde } from "../serdes";
import { TimeKeyedStore, type TimedEntry } from "../state/time-keyed-store";
import { decodeStored } from "../state/typed-store";
import type { AnySupplier } from "../topology/graph";
import { KStream } from "./kstream";
import type { StreamJoined } from "./options";
import { erase, passThrough, processorOf } from "./processors";
import { joinInput } from "./stream-table-join";
import type { JoinWindows } from "./windows";

export type StreamJoinKind = "inner" | "left" | "outer";

const MATCHED = "1";
const UNMATCHED = "0";

type Joiner<V, VO, VR> = (value: V | null, otherValue: VO | null) => VR;

export function streamStreamJoin<K, V, VO, VR>(
  kind: StreamJoinKind,
  left: KStream<K, V>,
  right: KStream<K, VO>,
  joiner: Joiner<V, VO, VR>,
  windows: JoinWindows,
  joined: StreamJoined<K, V, VO>,
): KStream<K, VR> {
  const { graph } = left;
  if (right.graph !== graph) throw new TopologyError("cannot join streams of different StreamsBuilders");
  const base = joined.name ?? graph.newName("KSTREAM-JOIN");
  const keySerde = serdeOrDefault(joined.key ?? left.keySerde ?? right.keySerde);
  const stores = { this: `${base}-this-join-store`, other: `${base}-other-join-store` };
  graph.addStore({ name: stores.this, kind: "buffer", keySerde: keySerde as Serde<unknown>, valueSerde: serdeOrDefault(joined.value ?? left.valueSerde) as Serde<unknown> });
  graph.addStore({ name: stores.other, kind: "buffer", keySerde: keySerde as Serde<unknown>, valueSerde: serdeOrDefault(joined.otherValue ?? right.valueSerde) as Serde<unknown> });
  const leftParent = joinInput(left, { key: keySerde, ...(joined.value ? { value: joined.value } : {}) }, `${base}-this`);
  const rightParent = joinInput(right, { key: keySerde, ...(joined.otherValue ? { value: joined.otherValue } : {}) }, `${base}-other`);
  const both = [stores.this, stores.other];
  const side = (isThis: boolean) => joinSide(kind, isThis, stores, windows, joiner as Joiner<unknown, unknown, VR>);
  const thisNode = graph.addProcessor("KSTREAM-JOINTHIS", { parents: [leftParent], supplier: side(true), stores: both });
  const otherNode = graph.addProcessor("KSTREAM-JOINOTHER", { parents: [rightParent], supplier: side(false), stores: both });
  const merged = graph.addProcessor("KSTREAM-MERGE", { parents: [thisNode, otherNode], supplier: passThrough, stores: [] });
  return new KStream<K, VR>(graph, merged, keySerde, undefined, false);
}

function joinSide<VR>(
  kind: StreamJoinKind,
  isThis: boolean,
  stores: { readonly this: string; readonly other: string },
  windows: JoinWindows,
  joiner: Joiner<unknown, unknown, VR>,
): AnySupplier {
  const { afterMs: difference, graceMs } = windows;
  const emitsUnmatched = (thisSide: boolean) => (thisSide ? kind !== "inner" : kind === "outer");
  return erase(
    processorOf<unknown, unknown, unknown, VR>((record, context) => {
      if (record.key === null || record.value === null) return context.dropRecord(`null ${record.key === null ? "key" : "value"} in a stream-stream join`);
      const handles = { this: internal(context).storeHandle(stores.this), other: internal(context).storeHandle(stores.other) };
      const own = isThis ? handles.this : handles.other;
      const partner = isThis ? handles.other : handles.this;
      const ownBuffer = new TimeKeyedStore(own.raw);
      const partnerBuffer = new TimeKeyedStore(partner.raw);
      const t = record.timestamp;
      const seen = Math.max(t, ownBuffer.streamTime(), partnerBuffer.streamTime());

      if (seen > t + difference + graceMs) {
        internal(context).dropLateRecord();
      } else {
        const { seq } = ownBuffer.advance(seen, true);
        const key = own.keySerde.serialize(record.key);
        const partners = partnerBuffer.fetch(key, t - difference, t + difference);
        for (const match of partners) {
          const value = decodeStored(isThis ? stores.other : stores.this, partner.valueSerde, match.value.slice(1), "value");
          const joinedValue = isThis ? joiner(record.value, value) : joiner(value, record.value);
          context.forward({ ...record, value: joinedValue, timestamp: Math.max(t, match.time) });
          if (match.value.startsWith(UNMATCHED) && emitsUnmatched(!isThis)) partnerBuffer.put(match.key, match.time, match.seq, MATCHED + match.value.slice(1));
        }
        ownBuffer.put(key, t, seq, (partners.length > 0 ? MATCHED : UNMATCHED) + own.valueSerde.serialize(record.value));
      }

      // Expire what can no longer join, from both buffers; outer sides emit their unmatched records.
      const before = seen - 2 * difference - graceMs;
      const expired: { entry: TimedEntry; fromThis: boolean }[] = [
        ...new TimeKeyedStore(handles.this.raw).takeBefore(before).map((entry) => ({ entry, fromThis: true })),
        ...new TimeKeyedStore(handles.other.raw).takeBefore(before).map((entry) => ({ entry, fromThis: false })),
      ].sort((a, b) => a.entry.time - b.entry.time || Number(b.fromThis) - Number(a.fromThis));
      for (const { entry, fromThis } of expired) {
        if (!entry.value.startsWith(UNMATCHED) || !emitsUnmatched(fromThis)) continue;
        const handle = fromThis ? handles.this : handles.other;
        const name = fromThis ? stores.this : stores.other;
        const value = decodeStored(name, handle.valueSerde, entry.value.slice(1), "value");
        context.forward({
          key: decodeStored(name, handle.keySerde, entry.key, "key"),
          value: fromThis ? joiner(value, null) : joiner(null, value),
          timestamp: entry.time,
          headers: [],
        });
      }
    }),
  );
}
