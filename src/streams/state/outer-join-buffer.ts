/**
 * The buffer of a left or outer stream-stream join (Kafka's shared outer-join store): records
 * that found no partner yet, waiting until their window closes to be joined with null. Entries
 * are ordered as Kafka orders them — by timestamp, then right side before left, then serialized
 * key, then arrival — because that is the order in which they are emitted.
 *
 * It also keeps, in the same store (so it is restored with the entries), the join's stream time
 * (the largest timestamp either side has seen) and Kafka's `minTime`: the timestamp from which a
 * scan for closed windows may find something.
 *
 * Layout in a plain raw store:
 * - `e` + time + side (`0` right, `1` left) + encodeKey(key) + seq → the record's serialized value
 * - `m` → JSON `{ streamTime, minTime, seq }`, logged once per commit (its latest value)
 */
import { changelogRows } from "./changelog-rows";
import type { RawKeyValueStore } from "./key-value-store";
import { decodeKey, decodeTime, encodeKey, encodeTime, TIME_WIDTH } from "./key-codec";

export type JoinSide = "left" | "right";

export interface UnjoinedRecord {
  readonly time: number;
  readonly side: JoinSide;
  /** The serialized key. */
  readonly key: string;
  readonly value: string;
}

interface Meta {
  readonly streamTime: number;
  /** Null: no lower bound known (Kafka's `Long.MAX_VALUE`, which makes the next scan run). */
  readonly minTime: number | null;
  readonly seq: number;
}

const NO_META: Meta = { streamTime: -1, minTime: null, seq: 0 };
/** Entries read per range query while scanning. */
const PAGE = 100;

export class OuterJoinBuffer {
  constructor(private readonly raw: RawKeyValueStore) {}

  /** The join's stream time after a record at `timestamp`: never goes back. */
  advance(timestamp: number): number {
    const meta = this.meta();
    if (timestamp > meta.streamTime) this.writeMeta({ ...meta, streamTime: timestamp });
    return Math.max(timestamp, meta.streamTime);
  }

  get streamTime(): number {
    return this.meta().streamTime;
  }

  get minTime(): number | null {
    return this.meta().minTime;
  }

  /** Buffers an unjoined record. */
  add(time: number, side: JoinSide, key: string, value: string): void {
    const meta = this.meta();
    this.raw.put(`${this.prefix(time, side, key)}${encodeTime(meta.seq)}`, value, time);
    this.writeMeta({ ...meta, minTime: meta.minTime === null ? time : Math.min(meta.minTime, time), seq: meta.seq + 1 });
  }

  /** Removes every buffered record of that time, side and key: it found a partner. */
  removeJoined(time: number, side: JoinSide, key: string): void {
    const prefix = this.prefix(time, side, key);
    for (const entry of this.raw.prefix(prefix)) this.raw.delete(entry.key);
  }

  /**
   * Goes through the buffered records in order. `visit` answers whether the record's window has
   * closed (it is then emitted by the caller and removed), and may end the scan by answering
   * `"stop"`. As in Kafka, `minTime` ends as the time of the last record looked at.
   */
  scan(visit: (record: UnjoinedRecord) => "emit" | "keep" | "stop"): void {
    let minTime: number | null = null;
    let from = "e";
    scanning: for (;;) {
      const page = this.raw.range(from, "e\u{10FFFF}", PAGE);
      for (const { key: rawKey, value } of page) {
        from = `${rawKey}\u0000`;
        const record = decode(rawKey, value);
        minTime = record.time;
        const answer = visit(record);
        if (answer === "stop") break scanning;
        if (answer === "emit") this.raw.delete(rawKey);
      }
      if (page.length < PAGE) break;
    }
    const meta = this.meta();
    if (meta.minTime !== minTime) this.writeMeta({ ...meta, minTime });
  }

  private prefix(time: number, side: JoinSide, key: string): string {
    return `e${encodeTime(time)}${side === "right" ? "0" : "1"}${encodeKey(key)}`;
  }

  private meta(): Meta {
    const text = this.raw.get("m");
    return text === undefined ? NO_META : (JSON.parse(text) as Meta);
  }

  private writeMeta(meta: Meta): void {
    changelogRows(this.raw).writeAtCommit("m", JSON.stringify(meta));
  }
}

function decode(rawKey: string, value: string): UnjoinedRecord {
  const time = decodeTime(rawKey, 1);
  const side: JoinSide = rawKey[1 + TIME_WIDTH] === "0" ? "right" : "left";
  const { key } = decodeKey(rawKey, 2 + TIME_WIDTH);
  return { time, side, key, value };
}
