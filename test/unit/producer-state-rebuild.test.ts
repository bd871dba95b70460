/** How a partition's producer state is rebuilt from a snapshot and the log after it (src/log/partition/producer-state.ts): pure. */
import { describe, expect, it } from "vitest";
import {
  expiredProducers,
  fromSnapshotRow,
  loggedBatches,
  toSnapshotRow,
  withBatch,
  type LoggedBatch,
  type ProducerEntry,
  type ProducerRow,
} from "../../src/log/partition/producer-state";
import { REMEMBERED_BATCHES } from "../../src/log/types";

const batch = (base: number, sequence: number, epoch = 0, count = 1, producerId = "p", appendTime = 100 + base): LoggedBatch => ({
  producerId,
  epoch,
  sequence,
  base,
  count,
  appendTime,
});
const row = (base: number, span: number, producer?: [string, number, number]): ProducerRow => ({
  base_offset: base,
  span,
  append_time: 100 + base,
  producer_id: producer?.[0] ?? null,
  producer_epoch: producer?.[1] ?? null,
  base_sequence: producer?.[2] ?? null,
});

/** Every producer's entry after `batches`, taken in order over `start`. */
function fold(batches: Iterable<LoggedBatch>, start = new Map<string, ProducerEntry>()): Map<string, ProducerEntry> {
  const entries = new Map(start);
  for (const b of batches) entries.set(b.producerId, withBatch(entries.get(b.producerId), b));
  return entries;
}

describe("withBatch", () => {
  it("keeps the current epoch's last REMEMBERED_BATCHES batches, and starts afresh at a newer epoch", () => {
    let entry: ProducerEntry | undefined;
    for (let s = 0; s < REMEMBERED_BATCHES + 2; s++) entry = withBatch(entry, batch(10 * s, s, 1, 3));
    expect(entry).toEqual({
      epoch: 1,
      lastSeen: 160,
      lastBase: 60,
      batches: [2, 3, 4, 5, 6].map((s) => ({ sequence: s, base: 10 * s, count: 3 })),
    });
    expect(withBatch(entry, batch(70, 0, 2))).toEqual({ epoch: 2, lastSeen: 170, lastBase: 70, batches: [{ sequence: 0, base: 70, count: 1 }] });
  });

  it("leaves an entry as it is for a batch at or below the last one it took (a replay over a newer row)", () => {
    const entry = withBatch(withBatch(undefined, batch(0, 0)), batch(5, 1));
    expect(withBatch(entry, batch(5, 1))).toBe(entry);
    expect(withBatch(entry, batch(0, 0))).toBe(entry);
    expect(withBatch({ ...entry, lastSeen: 999 }, batch(5, 1)).lastSeen).toBe(999);
  });
});

describe("loggedBatches", () => {
  it("reads each producer's batch from its rows, a batch stored as several rows as one, plain rows as none", () => {
    const rows = [
      row(0, 2),
      row(2, 3, ["p", 0, 0]),
      row(5, 4, ["p", 0, 1]),
      row(9, 1, ["p", 0, 1]),
      row(10, 2, ["q", 3, 7]),
      row(12, 1),
      row(13, 1, ["q", 3, 8]),
    ];
    expect([...loggedBatches(rows)]).toEqual([batch(2, 0, 0, 3), { ...batch(5, 1, 0, 5), appendTime: 105 }, batch(10, 7, 3, 2, "q"), batch(13, 8, 3, 1, "q")]);
    expect([...loggedBatches([])]).toEqual([]);
    // Rows compaction thinned keep their span: the batch's range stays whole.
    expect([...loggedBatches([row(0, 5, ["p", 0, 0])])]).toEqual([batch(0, 0, 0, 5)]);
  });
});

describe("a snapshot and the rows after it", () => {
  it("rebuild the state the appends built, wherever the snapshot was taken and whichever rows it wrote ahead", () => {
    const log: LoggedBatch[] = [];
    for (let i = 0; i < 40; i++) {
      const producerId = ["p", "q", "r"][i % 3]!;
      const epoch = i < 20 ? 0 : 1;
      const sequence = log.filter((b) => b.producerId === producerId && b.epoch === epoch).length;
      log.push(batch(2 * i, sequence, epoch, 2, producerId));
    }
    const live = fold(log);
    for (let at = 0; at <= log.length; at++) {
      // The snapshot as stored (each entry through its row), then the rows after it replayed.
      const snapshot = new Map([...fold(log.slice(0, at))].map(([id, entry]) => [id, fromSnapshotRow(toSnapshotRow(id, entry))]));
      expect(fold(log.slice(at), snapshot)).toEqual(live);
      // A producer's row written ahead of the snapshot (a retry's) is replayed over safely.
      const ahead = new Map(snapshot);
      ahead.set("p", live.get("p")!);
      expect(fold(log.slice(at), ahead)).toEqual(live);
    }
  });

  it("round-trips an entry through its row", () => {
    const entry: ProducerEntry = { epoch: 4, lastSeen: 12, lastBase: 30, batches: [{ sequence: 9, base: 30, count: 2 }] };
    expect(toSnapshotRow("p", entry)).toEqual({ producer_id: "p", epoch: 4, last_seen: 12, last_base: 30, batches: "[[9,30,2]]" });
    expect(fromSnapshotRow(toSnapshotRow("p", entry))).toEqual(entry);
  });
});

describe("expiredProducers", () => {
  it("names the producers not seen for the expiry time", () => {
    const entries = new Map<string, ProducerEntry>([
      ["old", { epoch: 0, lastSeen: 100, lastBase: 0, batches: [] }],
      ["edge", { epoch: 0, lastSeen: 150, lastBase: 1, batches: [] }],
      ["new", { epoch: 0, lastSeen: 200, lastBase: 2, batches: [] }],
    ]);
    expect(expiredProducers(entries, 250, 100)).toEqual(["old"]);
    expect(expiredProducers(entries, 251, 100)).toEqual(["old", "edge"]);
  });
});
