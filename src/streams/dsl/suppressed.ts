/**
 * What `KTable.suppress` is asked to do (Kafka's `Suppressed` and `BufferConfig`): hold each key's
 * updates until its window closes (`untilWindowCloses`, final results of a windowed table) or until
 * a time limit has passed since its first held update (`untilTimeLimit`, any table), in a buffer
 * that may be bounded by records and bytes. A full eager buffer emits its oldest entries early; a
 * full strict buffer stops the task (a processing error), since emitting early would break the
 * promise of final results. Configuration only: the processor is in ./suppress.ts.
 */
import { TopologyError } from "../errors";

/** What a full buffer does: emit its oldest entries early, or stop the task. */
export type BufferFullStrategy = "emit-early" | "shut-down";

function checkLimit(what: string, limit: number): number {
  if (!(limit >= 0) || (Number.isFinite(limit) && !Number.isInteger(limit)))
    throw new TopologyError(`${what} must be a non-negative integer (or Infinity), got ${limit}`);
  return limit;
}

/** Limits of a buffer; `Infinity` is no limit (Kafka's `Long.MAX_VALUE`). */
abstract class Limits {
  abstract readonly whenFull: BufferFullStrategy;

  constructor(
    readonly maxRecords: number,
    readonly maxBytes: number,
  ) {
    checkLimit("maxRecords", maxRecords);
    checkLimit("maxBytes", maxBytes);
  }

  /** No bounds at all: a buffer that is never full (so it never has to choose). */
  withNoBound(): StrictBufferConfig {
    return new StrictBufferConfig();
  }

  /** When full, stop the task rather than emit anything early. */
  shutDownWhenFull(): StrictBufferConfig {
    return new StrictBufferConfig(this.maxRecords, this.maxBytes);
  }

  /** When full, emit the oldest entries until it is not. */
  emitEarlyWhenFull(): EagerBufferConfig {
    return new EagerBufferConfig(this.maxRecords, this.maxBytes);
  }
}

/** A buffer that emits early when full: allowed for `untilTimeLimit` only. */
export class EagerBufferConfig extends Limits {
  readonly whenFull = "emit-early";

  constructor(maxRecords = Infinity, maxBytes = Infinity) {
    super(maxRecords, maxBytes);
  }

  withMaxRecords(recordLimit: number): EagerBufferConfig {
    return new EagerBufferConfig(recordLimit, this.maxBytes);
  }

  withMaxBytes(byteLimit: number): EagerBufferConfig {
    return new EagerBufferConfig(this.maxRecords, byteLimit);
  }
}

/** A buffer that never emits early: unbounded, or stopping the task when full. */
export class StrictBufferConfig extends Limits {
  readonly whenFull = "shut-down";

  constructor(maxRecords = Infinity, maxBytes = Infinity) {
    super(maxRecords, maxBytes);
  }

  withMaxRecords(recordLimit: number): StrictBufferConfig {
    return new StrictBufferConfig(recordLimit, this.maxBytes);
  }

  withMaxBytes(byteLimit: number): StrictBufferConfig {
    return new StrictBufferConfig(this.maxRecords, byteLimit);
  }
}

export type BufferConfig = EagerBufferConfig | StrictBufferConfig;

export const BufferConfig = {
  /** At most `recordLimit` keys held; full, it emits the oldest early (`.shutDownWhenFull()` to stop instead). */
  maxRecords: (recordLimit: number): EagerBufferConfig => new EagerBufferConfig(recordLimit, Infinity),
  /** At most `byteLimit` bytes held (Kafka's estimate: keys, values, timestamps, topic, headers). */
  maxBytes: (byteLimit: number): EagerBufferConfig => new EagerBufferConfig(Infinity, byteLimit),
  /** No bounds: the buffer holds whatever waits. */
  unbounded: (): StrictBufferConfig => new StrictBufferConfig(),
};

export type SuppressionMode = "until-window-closes" | "until-time-limit";

export class Suppressed {
  private constructor(
    readonly mode: SuppressionMode,
    /** How long an update waits for more updates of its key (`untilTimeLimit`); 0 for final results. */
    readonly timeLimitMs: number,
    readonly bufferConfig: BufferConfig,
    /** Name of the buffer store (and middle of its changelog topic); default generated. */
    readonly name?: string,
  ) {}

  /**
   * Emit each window once, with its final value, when it closes (end + grace); nothing before.
   * The buffer is unbounded unless given one that stops the task when full. The legacy form
   * `untilWindowCloses({ name })` names the buffer store.
   */
  static untilWindowCloses(bufferConfig: StrictBufferConfig | { readonly name?: string } = BufferConfig.unbounded()): Suppressed {
    if (bufferConfig instanceof StrictBufferConfig) return new Suppressed("until-window-closes", 0, bufferConfig);
    if ((bufferConfig as object) instanceof EagerBufferConfig)
      throw new TopologyError("untilWindowCloses needs a strict buffer (unbounded, or shutDownWhenFull): emitting early would not be final");
    return new Suppressed("until-window-closes", 0, BufferConfig.unbounded(), bufferConfig.name);
  }

  /**
   * Emit a key's latest update once `timeLimitMs` of stream time has passed since the first update
   * held for it (or earlier, when an eager buffer is full). Any table.
   */
  static untilTimeLimit(timeLimitMs: number, bufferConfig: BufferConfig): Suppressed {
    if (!(timeLimitMs >= 0)) throw new TopologyError(`untilTimeLimit needs a non-negative time limit, got ${timeLimitMs}`);
    return new Suppressed("until-time-limit", timeLimitMs, bufferConfig);
  }

  withName(name: string): Suppressed {
    return new Suppressed(this.mode, this.timeLimitMs, this.bufferConfig, name);
  }
}
