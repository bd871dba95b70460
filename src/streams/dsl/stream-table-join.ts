/**
 * Stream-table joins (inner, left): each stream record looks up the table's row of its key; the
 * result keeps the stream record's timestamp. Table updates produce nothing by themselves. A
 * record with a null value is dropped (counted); one with a null key is dropped by an inner join
 * and joined with null by a left join (KIP-962). The table is read from its store, so the join runs
 * in the table's subtopology: the stream is repartitioned first when its key may have changed, and
 * the build checks that the two topics are co-partitioned.
 *
 * A versioned table (KIP-914) is read as of the stream record's timestamp: the row it had then.
 * With a grace period (KIP-923, versioned tables only) records first wait in a change-logged buffer
 * (`<name>-Buffer`) until the buffer's stream time is the grace period past them, so that table
 * updates up to that late are seen; they then join in timestamp order (then key, then arrival). A
 * record already that late when it arrives joins at once. The buffer keeps its stream time, so a
 * restored one releases records exactly when the wiped one would have.
 */
import { TopologyError } from "../errors";
import type { Header, StreamRecord } from "../record";
import { serdeOrDefault, type Serde } from "../serdes";
import { decodeKey, encodeKey, encodeTime } from "../state/key-codec";
import { TimeKeyedStore } from "../state/time-keyed-store";
import { decodeStored } from "../state/typed-store";
import { internal, type ProcessorContext } from "../processor";
import type { GraphNode } from "../topology/graph";
import { KStream } from "./kstream";
import type { KTable } from "./ktable";
import type { Joined } from "./options";
import { erase, processorOf } from "./processors";
import { repartitionThrough } from "./repartition";

/**
 * The node a join reads a stream from: the stream, or its repartition topic's source if its key
 * may have changed. A side that joins records without a key with null (`keepNullKeys`) keeps them
 * through the repartition topic.
 */
export function joinInput<K, V>(stream: KStream<K, V>, joined: Joined<K, V>, name: string, keepNullKeys = false): GraphNode {
  if (!stream.repartitionRequired) return stream.node;
  return repartitionThrough(stream, name, serdeOrDefault(joined.key ?? stream.keySerde), serdeOrDefault(joined.value ?? stream.valueSerde), keepNullKeys);
}

/** A stream record waiting in the grace buffer: its serialized value and headers (key and time are the entry's). */
interface Waiting {
  readonly value: string;
  readonly headers: readonly Header[];
}

export function streamTableJoin<K, V, VT, VR, T extends null>(
  kind: "inner" | "left",
  stream: KStream<K, V>,
  table: KTable<K, VT, T>,
  joiner: (value: V, tableValue: VT | null) => VR,
  joined: Joined<K, V>,
): KStream<K, VR> {
  const { graph } = stream;
  if (table.graph !== graph) throw new TopologyError("cannot join a stream and a table of different StreamsBuilders");
  const { storeName, lookup, lookupAsOf, historyRetentionMs } = table.materialize();
  const grace = joined.gracePeriodMs;
  if (grace !== undefined) {
    if (lookupAsOf === undefined) throw new TopologyError("KTable must be versioned to use a grace period in a stream table join.");
    if (!(grace >= 0)) throw new TopologyError(`a join's grace period must be non-negative, got ${grace}`);
    if (historyRetentionMs! < grace) throw new TopologyError("History retention must be at least grace period.");
  }
  const prefix = kind === "inner" ? "KSTREAM-JOIN" : "KSTREAM-LEFTJOIN";
  const name = graph.newName(prefix);
  // The table's key serde is the one a repartitioned stream must use anyway: its keys meet the table's.
  const keySerde = stream.keySerdeOr(joined.key ?? table.keySerde, `${kind} join()`, "join(table, joiner, { key: Serdes.string() })") as Serde<unknown>;
  const parent = joinInput(stream, { ...joined, key: keySerde as Serde<K> }, joined.name ?? name, kind === "left");
  const valueSerde = serdeOrDefault(joined.value ?? stream.valueSerde) as Serde<unknown>;
  const bufferName = grace === undefined ? undefined : `${joined.name ?? name}-Buffer`;
  if (bufferName !== undefined) graph.addStore({ name: bufferName, kind: "buffer", keySerde, valueSerde });

  const join = (record: StreamRecord<K, V>, context: ProcessorContext<K, VR>) => {
    const found = lookupAsOf ? lookupAsOf(context, record.key, record.timestamp) : lookup(context, record.key);
    const row = found?.value as VT | undefined;
    if (row === undefined && kind === "inner") return;
    context.forward({ ...record, value: joiner(record.value, row ?? null) });
  };
  const supplier = processorOf<K, V, K, VR>((record, context) => {
    if (kind === "left" && record.key === null && record.value !== null) return context.forward({ ...record, value: joiner(record.value, null) });
    if (record.key === null || record.value === null) return context.dropRecord(`null ${record.key === null ? "key" : "value"} in a stream-table join`);
    if (bufferName === undefined) return join(record, context);
    const buffer = new TimeKeyedStore(internal(context).storeHandle(bufferName).raw);
    // Too late to wait: the buffer has released records this old already.
    if (buffer.streamTime() - grace! > record.timestamp) return join(record, context);
    const { streamTime, seq } = buffer.advance(record.timestamp, true);
    // Entries order by time, then key, then arrival (Kafka's buffer orders by time, key, sequence).
    const entryKey = encodeKey(keySerde.serialize(record.key)) + encodeTime(seq);
    buffer.put(entryKey, record.timestamp, 0, JSON.stringify({ value: valueSerde.serialize(record.value), headers: record.headers } satisfies Waiting));
    for (const due of buffer.takeBefore(streamTime - grace! + 1)) {
      const waiting = JSON.parse(due.value) as Waiting;
      const key = decodeStored(bufferName, keySerde, decodeKey(due.key, 0).key, "key") as K;
      join({ key, value: decodeStored(bufferName, valueSerde, waiting.value, "value") as V, timestamp: due.time, headers: waiting.headers }, context);
    }
  });
  const stores = bufferName === undefined ? [storeName] : [storeName, bufferName];
  const node = graph.addProcessor(prefix, { parents: [parent], supplier: erase(supplier), stores }, name);
  return new KStream<K, VR>(graph, node, keySerde as Serde<K>, undefined, false);
}
