/**
 * Measured batches (`encodeBatch`, src/log/append-batch.ts): the sender measures what it encodes
 * as the partition would, so the partition stores the batch without parsing it again. The measure
 * must be the partition's own (checked against `parseEntries` on every kind of string), a batch
 * the partition would refuse carries none, and a measured batch is stored as the very rows the
 * parsed one is.
 */
import { env } from "cloudflare:workers";
import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { arrivingBatch, maxTimestampOf } from "../../src/log/append-batch";
import { InvalidRecord } from "../../src/log/errors";
import { PartitionStore } from "../../src/log/partition-store";
import { encodeBatch, parseEntries, toEntry } from "../../src/log/record-batch";
import { MAX_RECORD_BYTES } from "../../src/log/records";
import type { ProducerRecord } from "../../src/log/types";

const NOW = 1_700_000_000_000;

/** Batches of every kind of string and timestamp the partition measures differently. */
const batches: ProducerRecord[][] = [
  [{ key: "k", value: "plain" }],
  [
    { key: null, value: "no key", timestamp: 5 },
    { key: "k", value: "", timestamp: 0 },
  ],
  [{ key: "clé", value: "é€", headers: [{ key: "h", value: "日本" }] }],
  [{ key: "x", value: "😀 and a lone \ud83d half", timestamp: 9, headers: [{ key: "\udc00", value: "" }] }],
  // ASCII texts JSON escapes: control characters (as \u00XX), quotes, backslashes, and a literal "\u".
  [{ key: "ctl", value: '\u0001\u001f\t\n"\\', headers: [{ key: "\\u00e9", value: "a\\\\ub" }] }],
  [{ key: "json", value: JSON.stringify({ count: 3, sum: 7 }), timestamp: NOW, headers: [{ key: "edge-streams.position", value: "orders/0/12" }] }],
  Array.from({ length: 200 }, (_, i) => ({ key: `customer-${i}`, value: JSON.stringify({ amount: i }), ...(i % 3 === 0 ? { timestamp: NOW - i } : {}) })),
];

describe("encodeBatch", () => {
  it("measures each batch exactly as the partition's own check does, and encodes it as before", () => {
    for (const records of batches) {
      const encoded = encodeBatch(records)!;
      expect(encoded.text).toBe(JSON.stringify(records.map(toEntry)));
      const checked = parseEntries(encoded.text);
      const what = JSON.stringify(records).slice(0, 80);
      expect(Array.from(encoded.measure!.sizes), what).toEqual(Array.from(checked.sizes));
      expect(arrivingBatch(encoded.text, encoded.measure).maxTimestamp(NOW), what).toBe(maxTimestampOf(checked.entries, NOW));
      expect(arrivingBatch(encoded.text, encoded.measure).maxTimestamp(3), what).toBe(maxTimestampOf(checked.entries, 3));
    }
  });

  it("gives no measure for a batch the partition refuses, so that the partition sees it and says why", () => {
    const refused: [ProducerRecord[], RegExp][] = [
      [[], /at least one record/],
      [[{ key: "k", value: "v", timestamp: -1 }], /non-negative integer/],
      [[{ key: "k", value: "x".repeat(MAX_RECORD_BYTES) }], /limit is/],
      // Within the limit in UTF-16 units, above it in UTF-8 bytes.
      [[{ key: "k", value: "é".repeat(MAX_RECORD_BYTES / 2) }], /limit is/],
    ];
    for (const [records, why] of refused) {
      const encoded = encodeBatch(records)!;
      expect(encoded.measure).toBeUndefined();
      expect(() => parseEntries(encoded.text)).toThrow(why);
    }
    // Shapes JSON would change are not encoded at all (the partition is sent the records).
    expect(encodeBatch([{ key: "k", value: "v", timestamp: Number.NaN }])).toBeUndefined();
    expect(encodeBatch([{ key: undefined as unknown as string, value: "v" }])).toBeUndefined();
  });
});

describe("a measured batch at the partition", () => {
  const rowsOf = (storage: DurableObjectStorage) =>
    storage.sql
      .exec("SELECT base_offset, count, span, bytes, max_timestamp, append_time, hex(sizes) AS sizes, records FROM record_batches ORDER BY base_offset")
      .toArray();

  it("is stored as the very rows the same batch parsed and checked is, a batch bigger than a row too", async () => {
    const all = [...batches, [0, 1, 2].map((i) => ({ key: `big${i}`, value: String(i).repeat(400_000) }))];
    const stored = async (name: string, measured: boolean) =>
      runInDurableObject(env.LOG_PARTITION.getByName(`${name}/0`), (_object, state) => {
        const store = new PartitionStore(state.storage, () => NOW);
        const tp = { topic: name, partition: 0 };
        for (const records of all) {
          const { text, measure } = encodeBatch(records)!;
          store.appendEncoded(tp, text, undefined, measured ? measure : undefined);
        }
        return { rows: rowsOf(state.storage), stats: store.stats(tp) };
      });
    const parsed = await stored("parsed-batches", false);
    const measured = await stored("measured-batches", true);
    expect(measured.rows.length).toBe(parsed.rows.length);
    expect(parsed.rows.length).toBeGreaterThan(all.length); // the big batch took two rows
    expect(measured).toEqual(parsed);
  });

  it("is taken as measured, unparsed; a measure that cannot be encodeBatch's is not trusted", async () => {
    await runInDurableObject(env.LOG_PARTITION.getByName("trusted-measure/0"), (_object, state) => {
      const store = new PartitionStore(state.storage, () => NOW);
      const tp = { topic: "trusted-measure", partition: 0 };
      const text = JSON.stringify([
        ["a", "1", null],
        ["b", "2", null],
      ]);
      // Sizes no parse of this text would give: what is stored is the sender's measure.
      store.appendEncoded(tp, text, undefined, { sizes: Uint32Array.of(100, 200), maxTimestamp: -1, untimed: true });
      expect(store.stats(tp).bytes).toBe(300);
      // Not encodeBatch's (no timestamps and none missing; no records; a record above the limit): parsed and checked.
      const bad = JSON.stringify([["a", 1, null]]);
      for (const measure of [
        { sizes: Uint32Array.of(2), maxTimestamp: -1, untimed: false },
        { sizes: new Uint32Array(0), maxTimestamp: -1, untimed: true },
        { sizes: Uint32Array.of(MAX_RECORD_BYTES + 1), maxTimestamp: 5, untimed: false },
      ]) {
        expect(() => store.appendEncoded(tp, bad, undefined, measure)).toThrow(InvalidRecord);
      }
      expect(store.offsets(tp)).toEqual({ earliest: 0, latest: 2 });
    });
  });
});
