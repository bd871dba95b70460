/**
 * The input position a changelog record reflects, carried in a header of every changelog record
 * written while processing an input record. After a wipe and a restore, the position to resume
 * input from can then be derived from what was restored (invariant I5), not kept separately.
 *
 * The value is `<topic>/<partition>/<offset>` (a `/` never occurs in a topic name): it rides on
 * every changelog record, through the outbox, the log and every restore, so it is kept short.
 * Changelogs written before carry `{"topic":…,"partition":…,"offset":…}`, still read.
 */
import type { Header, RecordMetadata } from "../record";
import { parseTopicPartition, topicPartition } from "../../names";

export const POSITION_HEADER = "edge-streams.position";

/** The last partition's `<topic>/<partition>/`: a task's records come by partition, in runs (a header per record). */
let lastPartition: { readonly topic: string; readonly partition: number; readonly prefix: string } | undefined;

export function positionHeader(position: RecordMetadata): Header {
  let last = lastPartition;
  if (last === undefined || last.topic !== position.topic || last.partition !== position.partition) {
    last = lastPartition = { topic: position.topic, partition: position.partition, prefix: `${topicPartition(position)}/` };
  }
  return { key: POSITION_HEADER, value: `${last.prefix}${position.offset}` };
}

/** The input position named in a record's headers, if any. */
export function positionFromHeaders(headers: readonly Header[]): RecordMetadata | undefined {
  const header = headers.find((h) => h.key === POSITION_HEADER);
  if (!header) return undefined;
  return header.value.startsWith("{") ? positionFromJson(header.value) : positionFromPath(header.value);
}

const COUNT = /^(0|[1-9][0-9]*)$/;

/** `value` from `start` on as `COUNT` reads it (a whole number, no leading zero), without cutting it out; undefined when it is not one. */
function countAt(value: string, start: number): number | undefined {
  const length = value.length - start;
  if (length <= 0 || length > 15) return length > 15 && COUNT.test(value.slice(start)) ? Number(value.slice(start)) : undefined;
  if (length > 1 && value.charCodeAt(start) === 48) return undefined;
  let n = 0;
  for (let i = start; i < value.length; i++) {
    const digit = value.charCodeAt(i) - 48;
    if (digit < 0 || digit > 9) return undefined;
    n = n * 10 + digit;
  }
  return n;
}

function positionFromPath(value: string): RecordMetadata | undefined {
  const last = value.lastIndexOf("/");
  const tp = parseTopicPartition(value.slice(0, last));
  const offset = value.slice(last + 1);
  if (!tp || !COUNT.test(offset)) return undefined;
  return { ...tp, offset: Number(offset) };
}

/** The form changelogs carried before the path above. */
function positionFromJson(value: string): RecordMetadata | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch {
    return undefined;
  }
  if (typeof parsed !== "object" || parsed === null) return undefined;
  const { topic, partition, offset } = parsed as Record<string, unknown>;
  if (typeof topic !== "string" || typeof partition !== "number" || typeof offset !== "number") return undefined;
  return { topic, partition, offset };
}

/**
 * The input positions a run of changelog records names, gathered for a restore: each input
 * partition (`topic/partition`) → one past the highest offset named. As `positionFromHeaders`
 * reads each record, but without an object per record: a restore reads every record of a changelog
 * (tens of thousands per window), each naming one of a task's few input partitions.
 */
export class ReachedPositions {
  readonly reached: Record<string, number> = {};
  /** `topic/partition` as a header names it → whether it is one (checked once per partition). */
  private readonly partitions = new Map<string, boolean>();
  /** The partition the last header named. */
  private lastPartition: { readonly tp: string; readonly valid: boolean } | undefined;

  add(headers: readonly Header[]): void {
    for (const header of headers) {
      if (header.key !== POSITION_HEADER) continue;
      this.addValue(header.value);
      return;
    }
  }

  /** `add` of headers as a stored entry flattens them: `[key0, value0, key1, value1, …]` (src/log/record-batch.ts). */
  addFlat(flat: readonly string[]): void {
    for (let i = 0; i + 1 < flat.length; i += 2) {
      if (flat[i] !== POSITION_HEADER) continue;
      this.addValue(flat[i + 1]!);
      return;
    }
  }

  private addValue(value: string): void {
    if (value.startsWith("{")) {
      const position = positionFromJson(value);
      if (position) this.reach(topicPartition(position), position.offset);
      return;
    }
    const last = value.lastIndexOf("/");
    // Records in a row mostly name the partition the one before named: its name is not cut out again.
    let seen = this.lastPartition;
    if (seen === undefined || last !== seen.tp.length || !value.startsWith(seen.tp)) {
      const tp = value.slice(0, last);
      let valid = this.partitions.get(tp);
      if (valid === undefined) {
        valid = parseTopicPartition(tp) !== undefined;
        this.partitions.set(tp, valid);
      }
      seen = this.lastPartition = { tp, valid };
    }
    if (!seen.valid) return;
    const offset = countAt(value, last + 1);
    if (offset !== undefined) this.reach(seen.tp, offset);
  }

  /** Positions gathered elsewhere (`reached` of another run), as if their records were added. */
  merge(reached: Readonly<Record<string, number>>): void {
    for (const [tp, next] of Object.entries(reached)) this.reach(tp, next - 1);
  }

  private reach(tp: string, offset: number): void {
    const next = offset + 1;
    if (next > (this.reached[tp] ?? 0)) this.reached[tp] = next;
  }
}
