/**
 * Instantiates a subtopology for one task: a fresh processor per processor node, each with its
 * context, and sinks that serialize and hand records to the collector. Nodes are wired children
 * first, which the creation order allows: a node always comes after its parents. Every processor
 * runs under the processing error handler and every sink's serialization under the production
 * error handler (see `ErrorHandling`).
 */
import { MAX_INPUT_RECORD_BYTES, MAX_RECORD_BYTES } from "../../log/records";
import { checkRecordForLog } from "./record-for-log";
import type { Processor, StoreHandle } from "../processor";
import type { StreamRecord } from "../record";
import type { Subtopology, TopologySink, TopologySource } from "../topology/topology";
import { NodeContext, type RecordReceiver, type TaskServices } from "./node-context";
import type { ProcessorState } from "./processor-state";
import type { OutgoingRecord, RecordSink } from "./types";

type AnyProcessor = Processor<unknown, unknown, unknown, unknown>;

/** A source node, ready to receive deserialized records. */
export interface WiredSource {
  readonly node: TopologySource;
  readonly receive: RecordReceiver;
}

export interface WiredSubtopology {
  /** By topic name. */
  readonly sources: ReadonlyMap<string, WiredSource>;
  /** With their contexts, in creation order: the order to initialize and close them in. */
  readonly processors: readonly { readonly processor: AnyProcessor; readonly context: NodeContext }[];
}

export function wireSubtopology(
  subtopology: Subtopology,
  task: ProcessorState,
  services: TaskServices,
  stores: ReadonlyMap<string, StoreHandle>,
  collector: RecordSink,
  /** Topics the topology reads: what its sinks write there is held to `MAX_INPUT_RECORD_BYTES`. */
  read: ReadonlySet<string> = new Set(),
): WiredSubtopology {
  const receivers = new Map<string, RecordReceiver>();
  const sources = new Map<string, WiredSource>();
  const processors: { processor: AnyProcessor; context: NodeContext }[] = [];
  const childrenOf = (names: readonly string[]) => new Map(names.map((name) => [name, receivers.get(name)!]));
  const { errors } = services;

  for (const node of [...subtopology.nodes].reverse()) {
    if (node.kind === "sink") {
      const limit = read.has(node.topic) ? MAX_INPUT_RECORD_BYTES : MAX_RECORD_BYTES;
      const what = `${node.name}: the record for ${node.topic}`;
      receivers.set(node.name, (record) => {
        let out: OutgoingRecord[] | OutgoingRecord | undefined;
        try {
          out = outgoing(node, record, limit, what);
        } catch (thrown) {
          out = errors.productionFailed(node.name, thrown, node.topic, record);
        }
        if (out === undefined) return;
        if (!Array.isArray(out)) collector.send(out);
        else for (let i = 0; i < out.length; i++) collector.send(out[i]!);
      });
    } else if (node.kind === "processor") {
      const connected = new Map(node.stores.map((name) => [name, stores.get(name)!]));
      const context = new NodeContext(task, services, node.name, childrenOf(node.children), connected);
      const processor = node.supplier();
      processors.unshift({ processor, context });
      receivers.set(node.name, (record) => errors.processRecord(node.name, processor, record));
    } else {
      const children = [...childrenOf(node.children).values()];
      const only = children.length === 1 ? children[0]! : undefined;
      const receive: RecordReceiver = only ?? ((record) => children.forEach((child) => child(record)));
      for (const topic of node.topics) sources.set(topic, { node, receive });
    }
  }
  return { sources, processors };
}

/**
 * The serialized records a sink sends: one (as itself, not in an array: the common case, with no
 * partitioner or one that picks a partition), or one per partition a multicasting partitioner
 * picks (none if it picks none). Null keys and values stay null (a null value is a tombstone).
 * `what`: the record as an error names it (made once per sink, not per record).
 */
function outgoing(sink: TopologySink, record: StreamRecord<unknown, unknown>, limit: number, what: string): OutgoingRecord | OutgoingRecord[] {
  const chosen = sink.partitioner?.(record.key, record.value, sink.partitions);
  const partitions = chosen === undefined || typeof chosen === "number" ? undefined : [...new Set(chosen)];
  if (partitions === undefined) checkPartition(sink, chosen as number | undefined);
  else for (const partition of partitions) checkPartition(sink, partition);
  const key = record.key === null ? null : sink.keySerde.serialize(record.key);
  const value = record.value === null ? null : sink.valueSerde.serialize(record.value);
  // The log refuses it: better said here, where the production error handler decides.
  checkRecordForLog(what, key, value, record.headers, record.timestamp, limit);
  if (partitions === undefined)
    return { topic: sink.topic, partition: chosen as number | undefined, key, value, timestamp: record.timestamp, headers: record.headers };
  return partitions.map((partition) => ({ topic: sink.topic, partition, key, value, timestamp: record.timestamp, headers: record.headers }));
}

function checkPartition(sink: TopologySink, partition: number | undefined): void {
  if (partition !== undefined && !(Number.isInteger(partition) && partition >= 0 && partition < sink.partitions)) {
    throw new RangeError(`${sink.name}: partitioner chose partition ${partition}, but ${sink.topic} has ${sink.partitions}`);
  }
}
