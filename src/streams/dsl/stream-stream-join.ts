/**
 * Windowed stream-stream joins (inner, left, outer), with Kafka Streams' semantics. Each side's
 * records are kept in a change-logged buffer store (a `TimeKeyedStore`: key, timestamp, sequence
 * number) for the join's retention (before + after + grace), counted from the largest timestamp
 * that side's store has seen, as Kafka's join window stores keep them. A record at `t` joins
 * every record of the other side with the same key from `t - before` to `t + after` still kept
 * there, whether or not the record itself is late; the result has the larger of the timestamps.
 *
 * Left and outer joins: a record that found no partner waits in an `OuterJoinBuffer` until stream
 * time (the largest timestamp of either side) passes `t + after + grace` (for right records
 * `t + before + grace`), then is joined with null; a partner arriving meanwhile takes it out. A
 * record already that late when it arrives is joined with null at once. A record with a null
 * key cannot join anything: those sides join it with null at once (KIP-962). Both processors
 * use all the stores, so the two streams share a subtopology (co-partitioning is checked by the
 * build).
 */
import { TopologyError } from "../errors";
import { internal, type ProcessorContext } from "../processor";
import type { StreamRecord } from "../record";
import { serdeOrDefault, type Serde } from "../serdes";
import { OuterJoinBuffer, type JoinSide } from "../state/outer-join-buffer";
import { TimeKeyedStore } from "../state/time-keyed-store";
import { decodeStored } from "../state/typed-store";
import type { AnySupplier } from "../topology/graph";
import { KStream } from "./kstream";
import type { StreamJoined } from "./options";
import { erase, passThrough, processorOf } from "./processors";
import { joinInput } from "./stream-table-join";
import type { JoinWindows } from "./windows/join-windows";

export type StreamJoinKind = "inner" | "left" | "outer";

type Joiner<V, VO, VR> = (value: V | null, otherValue: VO | null) => VR;

interface JoinStores {
  readonly left: string;
  readonly right: string;
  /** Left and outer joins only. */
  readonly outer: string | undefined;
}

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
  const keySerde = left.keySerdeOr(joined.key ?? right.keySerde, `${kind} join()`, "join(other, joiner, windows, { key: Serdes.string() })");
  const stores: JoinStores = {
    left: `${base}-this-join-store`,
    right: `${base}-other-join-store`,
    outer: kind === "inner" ? undefined : `${base}-outer-shared-join-store`,
  };
  graph.addStore({
    name: stores.left,
    kind: "buffer",
    keySerde: keySerde as Serde<unknown>,
    valueSerde: serdeOrDefault(joined.value ?? left.valueSerde) as Serde<unknown>,
  });
  graph.addStore({
    name: stores.right,
    kind: "buffer",
    keySerde: keySerde as Serde<unknown>,
    valueSerde: serdeOrDefault(joined.otherValue ?? right.valueSerde) as Serde<unknown>,
  });
  if (stores.outer)
    graph.addStore({ name: stores.outer, kind: "buffer", keySerde: keySerde as Serde<unknown>, valueSerde: serdeOrDefault<unknown>(undefined) });
  const leftParent = joinInput(left, { key: keySerde, ...(joined.value ? { value: joined.value } : {}) }, `${base}-this`, kind !== "inner");
  const rightParent = joinInput(right, { key: keySerde, ...(joined.otherValue ? { value: joined.otherValue } : {}) }, `${base}-other`, kind === "outer");
  const all = [stores.left, stores.right, ...(stores.outer ? [stores.outer] : [])];
  const side = (s: JoinSide) => joinSide(kind, s, stores, windows, joiner as Joiner<unknown, unknown, VR>);
  const thisNode = graph.addProcessor("KSTREAM-JOINTHIS", { parents: [leftParent], supplier: side("left"), stores: all });
  const otherNode = graph.addProcessor("KSTREAM-JOINOTHER", { parents: [rightParent], supplier: side("right"), stores: all });
  const merged = graph.addProcessor("KSTREAM-MERGE", { parents: [thisNode, otherNode], supplier: passThrough, stores: [] });
  return new KStream<K, VR>(graph, merged, keySerde, undefined, false);
}

function joinSide<VR>(kind: StreamJoinKind, side: JoinSide, stores: JoinStores, windows: JoinWindows, joiner: Joiner<unknown, unknown, VR>): AnySupplier {
  const isLeft = side === "left";
  const otherSide: JoinSide = isLeft ? "right" : "left";
  // This side's window, as seen from its records: the other side's is mirrored.
  const before = isLeft ? windows.beforeMs : windows.afterMs;
  const after = isLeft ? windows.afterMs : windows.beforeMs;
  const { graceMs, retentionMs } = windows;
  const outer = isLeft ? kind !== "inner" : kind === "outer";
  /** The joiner with this side's value where it belongs. */
  const join = (mine: unknown, theirs: unknown) => (isLeft ? joiner(mine, theirs) : joiner(theirs, mine));
  /** How long after its own time a buffered record of a side may still find a partner. */
  const lookAhead = (s: JoinSide) => (s === "left" ? windows.afterMs : windows.beforeMs);

  return erase(
    processorOf<unknown, unknown, unknown, VR>((record, context) => {
      const handles = { left: internal(context).storeHandle(stores.left), right: internal(context).storeHandle(stores.right) };
      const own = handles[side];
      const partner = handles[otherSide];
      const unjoined = stores.outer === undefined ? undefined : new OuterJoinBuffer(internal(context).storeHandle(stores.outer).raw);
      const t = record.timestamp;
      // Every record moves the join's stream time, even one dropped below.
      const streamTime = unjoined?.advance(t) ?? t;

      if (outer && record.key === null && record.value !== null) return context.forward({ ...record, value: join(record.value, null) });
      if (record.key === null || record.value === null) return context.dropRecord(`null ${record.key === null ? "key" : "value"} in a stream-stream join`);

      if (unjoined && t === streamTime) emitClosed(unjoined, record, context);

      const key = own.keySerde.serialize(record.key);
      const partners = new TimeKeyedStore(partner.raw);
      const from = Math.max(0, t - before, partners.streamTime() - retentionMs + 1);
      const to = Math.max(0, t + after);
      const matches = partners.fetch(key, from, to);
      for (const match of matches) {
        unjoined?.removeJoined(match.time, otherSide, key);
        const theirs = decodeStored(stores[otherSide], partner.valueSerde, match.value, "value");
        context.forward({ ...record, value: join(record.value, theirs), timestamp: Math.max(t, match.time) });
      }
      if (outer && matches.length === 0) {
        // Too late for any partner to arrive on time: final now.
        if (!unjoined || to < streamTime) context.forward({ ...record, value: join(record.value, null) });
        else unjoined.add(t, side, key, own.valueSerde.serialize(record.value));
      }
      keep(new TimeKeyedStore(own.raw), key, t, own.valueSerde.serialize(record.value));
    }),
  );

  /** Puts the record in this side's store, unless that store already expired its time; expires what it no longer keeps. */
  function keep(buffer: TimeKeyedStore, key: string, t: number, value: string): void {
    const { streamTime, seq } = buffer.advance(t, true);
    const earliest = streamTime - retentionMs + 1;
    if (t >= earliest) buffer.put(key, t, seq, value, t);
    buffer.takeBefore(earliest);
  }

  /** Joins with null, in the buffer's order, every unjoined record whose window has closed. */
  function emitClosed(unjoined: OuterJoinBuffer, record: StreamRecord<unknown, unknown>, context: ProcessorContext<unknown, VR>): void {
    const streamTime = unjoined.streamTime;
    const minTime = unjoined.minTime;
    // Kafka's shortcut, kept for its effect on when results appear: nothing to look at yet.
    if (minTime !== null && minTime + after + graceMs >= streamTime) return;
    const open = { left: false, right: false };
    const handles = { left: internal(context).storeHandle(stores.left), right: internal(context).storeHandle(stores.right) };
    unjoined.scan((entry) => {
      if (open.left && open.right) return "stop";
      if (entry.time + lookAhead(entry.side) + graceMs >= streamTime) {
        open[entry.side] = true;
        return "keep";
      }
      const handle = handles[entry.side];
      const value = decodeStored(stores[entry.side], handle.valueSerde, entry.value, "value");
      context.forward({
        key: decodeStored(stores[entry.side], handle.keySerde, entry.key, "key"),
        value: entry.side === "left" ? joiner(value, null) : joiner(null, value),
        timestamp: entry.time,
        headers: record.headers,
      });
      return "emit";
    });
  }
}
