/**
 * Ingest planning: which partition each record of a request goes to (explicit partition, else
 * Kafka's default partitioner on the key) and how the offsets come back in request order.
 */
import { partitionForKey } from "../log/partitioner";
import type { AppendResult, ProducerRecord } from "../log/types";

export interface IngestRecord {
  readonly key: string;
  readonly value: unknown;
  readonly partition?: number;
  readonly timestamp?: number;
}

/** The records bound for one partition, with their positions in the request. */
export interface PartitionBatch {
  readonly partition: number;
  readonly positions: number[];
  readonly records: ProducerRecord[];
}

/**
 * Groups a request's records, encoded (./encode.ts), by partition, keeping each partition's
 * records in request order. Kafka's partitioner hashes the serialized key, as Kafka's producer does.
 */
export function planIngest(records: readonly IngestRecord[], encoded: readonly ProducerRecord[], partitions: number): PartitionBatch[] {
  const batches = new Map<number, PartitionBatch>();
  for (let position = 0; position < records.length; position++) {
    const record = encoded[position]!;
    const partition = records[position]!.partition ?? partitionForKey(record.key!, partitions);
    let batch = batches.get(partition);
    if (!batch) batches.set(partition, (batch = { partition, positions: [], records: [] }));
    batch.positions.push(position);
    batch.records.push(record);
  }
  return [...batches.values()].sort((a, b) => a.partition - b.partition);
}

export interface RecordOffset {
  readonly partition: number;
  readonly offset: number;
}

/** The offset of every record, in request order, from each partition's append result. */
export function offsetsInRequestOrder(batches: readonly PartitionBatch[], results: readonly AppendResult[], total: number): RecordOffset[] {
  const offsets = new Array<RecordOffset>(total);
  batches.forEach((batch, i) => {
    const { baseOffset } = results[i]!;
    batch.positions.forEach((position, j) => {
      offsets[position] = { partition: batch.partition, offset: baseOffset + j };
    });
  });
  return offsets;
}
