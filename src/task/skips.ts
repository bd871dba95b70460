/**
 * Passing over one record at an operator's request (`POST /admin/tasks/:id/skip`): a stopped task
 * is told the record it stopped at, keeps it among its skips, and runs again. Its next commits
 * process every record of that partition but this one — those before it too: the commit that
 * failed was rolled back whole, so its position may be before the record — and the commit that
 * passes it drops the skip, in the same transaction. A skip is durable until then, so a crash,
 * a rolled-back commit or a wipe cannot let the record be processed. Pure.
 */
import type { RecordOrigin } from "../streams/errors";
import type { InputPositions } from "./record-collector";
import { topicPartition } from "../names";

/** What a skip request found: done (or already done), or refused because the task is not stopped at that record. */
export type SkipOutcome = { readonly status: "skipped"; readonly already: boolean } | { readonly status: "refused"; readonly reason: string };

export function sameRecord(a: RecordOrigin, b: RecordOrigin): boolean {
  return a.topic === b.topic && a.partition === b.partition && a.offset === b.offset;
}

export function isSkipped(skips: readonly RecordOrigin[], record: RecordOrigin): boolean {
  return skips.some((s) => sameRecord(s, record));
}

/** The skips whose records processing has not passed yet, given the positions just written. */
export function remainingSkips(skips: readonly RecordOrigin[], positions: InputPositions): RecordOrigin[] {
  return skips.filter((s) => (positions[topicPartition(s)] ?? 0) <= s.offset);
}

/** `topic/partition offset n`, as messages name a record. */
export function describeRecord(at: RecordOrigin): string {
  return `${topicPartition(at)} offset ${at.offset}`;
}

/**
 * Whether a stopped instance may skip `wanted`: only the record its failure names. A record among
 * its skips still, or the one skipped last, was skipped already (a repeated request, say after a
 * crash between the skip and its answer): done, nothing more to do.
 */
export function skipDecision(
  failure: { readonly failure: string | null; readonly failedAt?: RecordOrigin | null },
  pending: readonly RecordOrigin[],
  lastSkipped: RecordOrigin | undefined,
  wanted: RecordOrigin,
): SkipOutcome | "skip" {
  if (isSkipped(pending, wanted) || (lastSkipped && sameRecord(lastSkipped, wanted))) return { status: "skipped", already: true };
  if (failure.failure === null) return { status: "refused", reason: `it is not stopped (it runs, or its record was skipped and passed already)` };
  if (!failure.failedAt) return { status: "refused", reason: `it is stopped by a failure no record caused: ${failure.failure}` };
  if (!sameRecord(failure.failedAt, wanted)) return { status: "refused", reason: `it is stopped at ${describeRecord(failure.failedAt)}` };
  return "skip";
}

/**
 * Where an error says it happened: the `origin` of a `DeserializationError`, `ProcessingError` or
 * `ProductionError`, or of an error it was caused by.
 */
export function recordOrigin(error: unknown): RecordOrigin | undefined {
  let e: unknown = error;
  for (let depth = 0; e instanceof Error && depth < 10; depth++) {
    const origin = (e as { origin?: unknown }).origin;
    if (isOrigin(origin)) return { topic: origin.topic, partition: origin.partition, offset: origin.offset };
    e = (e as { cause?: unknown }).cause;
  }
  return undefined;
}

function isOrigin(value: unknown): value is RecordOrigin {
  const o = value as RecordOrigin | undefined;
  return typeof o?.topic === "string" && Number.isInteger(o.partition) && Number.isInteger(o.offset);
}
