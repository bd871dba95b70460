/**
 * Pushed fetches (src/log/pushed-fetches.ts): the fetch a partition makes as it appends, carried
 * by the wake-up, must be exactly what the reader's own fetch from there would have returned at
 * that moment — checked against the partition store's fetch with every bound that matters —
 * and a reader uses one only when it fetches from exactly there, once.
 */
import { env } from "cloudflare:workers";
import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { PartitionStore } from "../../src/log/partition-store";
import { PUSH_MAX_AGE_MS, PUSH_MAX_BYTES, PushedFetches, pushAfterAppend, type PushedFetch } from "../../src/log/pushed-fetches";
import type { FetchBounds, ProducerRecord, TopicPartition } from "../../src/log/types";

const reader: FetchBounds = { maxRecords: 1_000, maxBytes: 1 << 20 };
/** When pushes are offered and taken, unless a test says otherwise. */
const NOW = 1_000_000;

/** A push of `n` records "r<base+i>" from `base`, as a partition makes it (nothing else appended). */
function push(tp: TopicPartition, base: number, n: number, extra: Partial<PushedFetch> = {}): PushedFetch {
  const records = JSON.stringify(Array.from({ length: n }, (_, i) => [`k${base + i}`, `r${base + i}`, 1_000 + i]));
  return {
    tp,
    from: base,
    bounds: { maxRecords: n, maxBytes: PUSH_MAX_BYTES },
    fetch: { batches: [{ base, appendTime: 5, records }], nextOffset: base + n, earliest: 0, latest: base + n },
    ...extra,
  };
}

const tp = { topic: "orders", partition: 1 };

describe("PushedFetches", () => {
  it("answers a fetch from exactly where the push starts, once, with its records decoded", () => {
    const pushes = new PushedFetches();
    pushes.offer(push(tp, 10, 3), NOW);
    expect(pushes.take({ topic: "orders", partition: 2 }, 10, reader, NOW)).toBeUndefined();
    const got = pushes.take(tp, 10, reader, NOW)!;
    expect(got.records.map((r) => [r.offset, r.key, r.value, r.timestamp])).toEqual([
      [10, "k10", "r10", 1_000],
      [11, "k11", "r11", 1_001],
      [12, "k12", "r12", 1_002],
    ]);
    expect({ nextOffset: got.nextOffset, latest: got.latest, earliest: got.earliest }).toEqual({ nextOffset: 13, latest: 13, earliest: 0 });
    expect(pushes.take(tp, 10, reader, NOW)).toBeUndefined();
    expect(pushes.size).toBe(0);
  });

  it("keeps pushes a reader has not reached, and drops those it has passed", () => {
    const pushes = new PushedFetches();
    pushes.offer(push(tp, 13, 2), NOW); // overtook the one before it
    pushes.offer(push(tp, 10, 3), NOW);
    // The reader is behind both: it fetches itself, and both stay.
    expect(pushes.take(tp, 7, reader, NOW)).toBeUndefined();
    expect(pushes.size).toBe(2);
    expect(pushes.take(tp, 10, reader, NOW)!.nextOffset).toBe(13);
    expect(pushes.take(tp, 13, reader, NOW)!.nextOffset).toBe(15);
    // A reader past a push (its own fetch went further) drops it.
    pushes.offer(push(tp, 15, 1), NOW);
    pushes.offer(push(tp, 16, 1), NOW);
    expect(pushes.take(tp, 17, reader, NOW)).toBeUndefined();
    expect(pushes.size).toBe(0);
  });

  it("is not used where the reader's own fetch would have taken fewer records, or the push did not reach the end", () => {
    const pushes = new PushedFetches();
    pushes.offer(push(tp, 0, 3), NOW);
    expect(pushes.take(tp, 0, { maxRecords: 2, maxBytes: 1 << 20 }, NOW)).toBeUndefined();
    pushes.offer(push(tp, 0, 3), NOW);
    expect(pushes.take(tp, 0, { maxRecords: 1_000, maxBytes: PUSH_MAX_BYTES - 1 }, NOW)).toBeUndefined();
    const cut = push(tp, 0, 3);
    pushes.offer({ ...cut, fetch: { ...cut.fetch, latest: 5 } }, NOW);
    expect(pushes.take(tp, 0, reader, NOW)).toBeUndefined();
  });

  it("is not used once older than PUSH_MAX_AGE_MS: records may have gone since (retention)", () => {
    const pushes = new PushedFetches();
    pushes.offer(push(tp, 0, 1), NOW);
    expect(pushes.take(tp, 0, reader, NOW + PUSH_MAX_AGE_MS)).toBeDefined();
    pushes.offer(push(tp, 1, 1), NOW);
    pushes.offer(push(tp, 2, 1), NOW + 500);
    expect(pushes.take(tp, 1, reader, NOW + PUSH_MAX_AGE_MS + 1)).toBeUndefined();
    expect(pushes.take(tp, 2, reader, NOW + PUSH_MAX_AGE_MS + 1)).toBeDefined();
    expect(pushes.size).toBe(0);
  });

  it("keeps the newest four per partition, and forgets all on clear", () => {
    const pushes = new PushedFetches();
    for (let base = 0; base < 6; base++) pushes.offer(push(tp, base, 1), NOW);
    pushes.offer(push({ topic: "orders", partition: 3 }, 0, 1), NOW);
    expect(pushes.size).toBe(5);
    expect(pushes.take(tp, 1, reader, NOW)).toBeUndefined(); // dropped for newer ones
    expect(pushes.take(tp, 2, reader, NOW)).toBeDefined();
    pushes.clear();
    expect(pushes.size).toBe(0);
  });
});

describe("a partition's push after an append", () => {
  it("is the fetch a reader would have made from there at that moment, under every bound; none for an append above PUSH_MAX_BYTES", async () => {
    await runInDurableObject(env.LOG_PARTITION.getByName("pushed-fetches/0"), (_object, state) => {
      const at = { topic: "pushed-fetches", partition: 0 };
      const store = new PartitionStore(state.storage);
      const appends: ProducerRecord[][] = [
        [{ key: "a", value: "1" }],
        [
          { key: null, value: "x", headers: [{ key: "h", value: "v" }], timestamp: 7 },
          { key: "b", value: "", timestamp: 3 },
          { key: "c", value: "é".repeat(100) },
        ],
        Array.from({ length: 50 }, (_, i) => ({ key: `k${i}`, value: `v${i}` })),
        // Together above PUSH_MAX_BYTES: the push would not reach the end.
        [
          { key: "big", value: "x".repeat(PUSH_MAX_BYTES / 2) },
          { key: "big", value: "y".repeat(PUSH_MAX_BYTES / 2) },
        ],
        [{ key: "after", value: "2" }],
      ];
      const used: number[] = [];
      for (const records of appends) {
        const appended = store.append(at, records);
        const pushed = pushAfterAppend(at, appended, (t, offset, bounds) => store.fetchEncoded(t, offset, bounds));
        if (records[0]!.key === "big") {
          expect(pushed === undefined).toBe(true);
          continue;
        }
        expect(pushed).toBeDefined();
        for (const bounds of [
          reader,
          { maxRecords: records.length, maxBytes: PUSH_MAX_BYTES },
          { maxRecords: 2, maxBytes: 1 << 20 },
          { maxRecords: 1_000, maxBytes: 64 },
        ]) {
          const pushes = new PushedFetches();
          pushes.offer(pushed!, NOW);
          const got = pushes.take(at, appended.baseOffset, bounds, NOW);
          // Where the push answers, it is the store's own fetch; where it does not, the reader fetches.
          if (got) expect(got).toEqual(store.fetch(at, appended.baseOffset, bounds));
          if (got && bounds === reader) used.push(appended.baseOffset);
        }
      }
      // Every append but the big one was answered for a reader's usual bounds.
      expect(used).toEqual([0, 1, 4, 56]);
    });
  });
});
