/** Tiered storage's pure parts: the segment format and keys, what moves to R2, what retention removes there, the orphan sweep's rule, and the configuration's rules. */
import { describe, expect, it } from "vitest";
import { decodeSegment, encodeSegment, SegmentFormatError, segmentBaseOf, segmentKey, type SegmentBatch } from "../../src/log/partition/segment-format";
import { DEFAULT_SWEEP, isOrphan } from "../../src/log/remote-sweep";
import { remoteRetentionStart, rowsToTier, SEGMENT_MAX_ROWS } from "../../src/log/partition/tiering";
import { RETENTION_CHECK_MS, tieringDueAt } from "../../src/log/partition/log-cleaner-manager";
import { localRetention, parseTopicConfig, topicConfig, TopicConfigError } from "../../src/log/topic-config";

const batch = (base: number, records: string, producer: string | null = null): SegmentBatch => ({
  base_offset: base,
  count: 2,
  span: 2,
  append_time: 10,
  max_timestamp: 20,
  bytes: 7,
  sizes: Uint32Array.from([3, 4]).buffer as ArrayBuffer,
  offsets: null,
  records,
  producer_id: producer,
  producer_epoch: producer ? 1 : null,
  base_sequence: producer ? 5 : null,
});

describe("segment format", () => {
  it("carries each batch as stored, records verbatim (newlines included), and refuses a cut-off segment", () => {
    const batches = [batch(0, '[["a","1",null],\n["b","22",null]]'), batch(2, '[["c","x\\ny",5],["d","4",null]]', "p1")];
    const text = encodeSegment({ topic: "t", partition: 3, base: 0, last: 3 }, batches);
    const decoded = decodeSegment(text);
    expect(decoded.header).toEqual({ topic: "t", partition: 3, base: 0, last: 3, batches: 2 });
    expect(decoded.batches.map((b) => ({ ...b, sizes: [...new Uint32Array(b.sizes)] }))).toEqual(batches.map((b) => ({ ...b, sizes: [3, 4] })));
    expect(() => decodeSegment(text.slice(0, -5))).toThrow(SegmentFormatError);
    expect(() => decodeSegment('{"format":"other"}\n')).toThrow(SegmentFormatError);
  });

  it("names each upload's object apart, and reads the base offset back from a key of either form", () => {
    expect(segmentKey("app", "orders", 2, 1234, "u1")).toBe("app/orders/2/00000000000000001234-u1.segment");
    expect(segmentKey("app", "orders", 2, 1234, "a")).not.toBe(segmentKey("app", "orders", 2, 1234, "b"));
    expect(segmentBaseOf(segmentKey("app", "orders", 2, 1234, "0b5c6a3e-1f2d-4c1a-9e8f-2a3b4c5d6e7f"))).toBe(1234);
    // Keys written before uploads were named.
    expect(segmentBaseOf("app/orders/2/00000000000000001234.segment")).toBe(1234);
    for (const other of [
      "app/orders/2/notes.txt",
      "app/orders/2/1234.segment",
      "app/orders/2/00000000000000001234-x.segment.tmp",
      "app/orders/2/00000000000000001234-a/b.segment",
    ]) {
      expect(segmentBaseOf(other), other).toBeUndefined();
    }
  });
});

describe("the orphan sweep's rule", () => {
  const at = (ms: number) => ({ uploaded: new Date(ms) });
  it("deletes only what no row names and no note accounts for, once older than the grace period", () => {
    expect(isOrphan(at(1_000), false, 1_000 + DEFAULT_SWEEP.graceMs + 1, DEFAULT_SWEEP.graceMs)).toBe(true);
    expect(isOrphan(at(1_000), false, 1_000 + DEFAULT_SWEEP.graceMs, DEFAULT_SWEEP.graceMs)).toBe(false);
    expect(isOrphan(at(1_000), true, 1_000 + 100 * DEFAULT_SWEEP.graceMs, DEFAULT_SWEEP.graceMs)).toBe(false);
    // A put that lands late is younger than the sweep's clock thinks possible: kept.
    expect(isOrphan(at(5_000), false, 1_000, 0)).toBe(false);
    expect(DEFAULT_SWEEP.graceMs).toBeGreaterThanOrEqual(60 * 60 * 1000);
    expect(DEFAULT_SWEEP.intervalMs).toBeGreaterThan(DEFAULT_SWEEP.graceMs);
  });
});

describe("what moves to R2", () => {
  const row = (base: number, bytes: number, at: number) => ({ base_offset: base, span: 1, bytes, max_timestamp: at, append_time: at });
  it("takes the oldest rows beyond local.retention.bytes, or older than local.retention.ms, up to a segment", () => {
    const rows = [row(0, 100, 0), row(1, 100, 0), row(2, 100, 500), row(3, 100, 900)];
    expect(rowsToTier(rows, { ms: -1, bytes: 250 }, 400, 1000)).toBe(2);
    expect(rowsToTier(rows, { ms: -1, bytes: -1 }, 400, 1000)).toBe(0);
    expect(rowsToTier(rows, { ms: 600, bytes: -1 }, 400, 1000)).toBe(2);
    expect(rowsToTier(rows, { ms: 0, bytes: -1 }, 400, 1000)).toBe(4);
    const many = Array.from({ length: SEGMENT_MAX_ROWS + 10 }, (_, i) => row(i, 1, 0));
    expect(rowsToTier(many, { ms: 0, bytes: -1 }, many.length, 10)).toBe(SEGMENT_MAX_ROWS);
  });

  it("retention removes whole remote segments, oldest first, by time or by the log's total size", () => {
    const seg = (base: number, last: number, at: number) => ({ base_offset: base, last_offset: last, bytes: 100, max_timestamp: at, max_append_time: at });
    const segments = [seg(0, 9, 0), seg(10, 19, 500), seg(20, 29, 900)];
    expect(remoteRetentionStart(segments, topicConfig("user", { "retention.ms": 600 }), 300, 1000)).toBe(10);
    expect(remoteRetentionStart(segments, topicConfig("user", { "retention.ms": -1, "retention.bytes": 150 }), 350, 1000)).toBe(20);
    expect(remoteRetentionStart(segments, topicConfig("user", { "retention.ms": -1 }), 300, 1000)).toBeUndefined();
  });

  it("is due on retention's cadence, only for a tiered topic", () => {
    const tiered = topicConfig("user", { "remote.storage.enable": true, "local.retention.bytes": 0 });
    expect(tieringDueAt(tiered, 0, undefined, true)).toBe(RETENTION_CHECK_MS);
    expect(tieringDueAt(topicConfig("user", { "remote.storage.enable": true, "local.retention.ms": 1000 }), 0, null, false)).toBeUndefined();
    expect(tieringDueAt(topicConfig("user"), 0, undefined, true)).toBeUndefined();
  });
});

describe("configuration", () => {
  it("reads Kafka's names, -2 meaning as retention.*", () => {
    expect(parseTopicConfig({ "remote.storage.enable": "true", "local.retention.ms": "-2", "local.retention.bytes": "1000" })).toEqual({
      "remote.storage.enable": true,
      "local.retention.ms": -2,
      "local.retention.bytes": 1000,
    });
    const config = topicConfig("user", { "remote.storage.enable": true, "retention.ms": -1, "local.retention.bytes": 10 });
    expect(localRetention(config)).toEqual({ ms: -1, bytes: 10 });
    expect(localRetention(topicConfig("user"))).toBeUndefined();
  });

  it("refuses remote storage on a compacted topic, a local part bigger than the log, and bad values", () => {
    expect(() => topicConfig("changelog", { "remote.storage.enable": true })).toThrow(/needs cleanup.policy=delete/);
    expect(() => topicConfig("user", { "remote.storage.enable": true, "retention.ms": 1000, "local.retention.ms": 2000 })).toThrow(TopicConfigError);
    expect(() => topicConfig("user", { "retention.bytes": 10, "local.retention.bytes": -1 })).toThrow(/at most retention.bytes/);
    expect(() => parseTopicConfig({ "remote.storage.enable": "yes" })).toThrow(/true or false/);
    expect(() => parseTopicConfig({ "local.retention.ms": "-3" })).toThrow(/-2, -1 or a non-negative/);
  });
});
