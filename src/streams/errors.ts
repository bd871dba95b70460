/**
 * Errors of the streams layer: a topology that cannot run (found when it is built), a record
 * whose bytes cannot be turned back into values, user code that failed while processing, and an
 * output record that could not be produced.
 */

/** The topology is invalid: unknown topic or store, duplicate store, topics not co-partitioned. */
export class TopologyError extends Error {
  override name = "TopologyError";
}

/** Where an undecodable input record came from; absent for values read back from a store. */
export interface RecordOrigin {
  readonly topic: string;
  readonly partition: number;
  readonly offset: number;
}

/** A serialized key or value could not be deserialized. */
export class DeserializationError extends Error {
  override name = "DeserializationError";

  constructor(
    message: string,
    readonly origin?: RecordOrigin,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** An error at one node of the topology, while a record (or a wall-clock punctuation) was being processed. */
abstract class NodeError extends Error {
  constructor(
    message: string,
    /** The node whose code failed, or the sink that could not produce the record. */
    readonly node: string,
    /** The input record being processed; absent in a wall-clock punctuation. */
    readonly origin?: RecordOrigin,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** User code threw while processing: an operator's function, a processor, a timestamp extractor, a punctuator. */
export class ProcessingError extends NodeError {
  override name = "ProcessingError";
}

/** An output record could not be produced: its key or value did not serialize, or the partitioner failed. */
export class ProductionError extends NodeError {
  override name = "ProductionError";
}

/** The message of anything thrown, for wrapping errors of user code. */
export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
