/**
 * Errors of the streams layer: a topology that cannot run (found when it is built) and a record
 * whose bytes cannot be turned back into values.
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

/** The message of anything thrown, for wrapping errors of user code. */
export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
