import { describe, expect, it } from "vitest";
import { partitionForKey } from "../../src/log/partitioner";
import {
  compareKeys,
  changelogTopicName,
  fetchSessions,
  fetchWindows,
  InMemoryStoreBackend,
  Materialized,
  Serdes,
  SessionWindows,
  SlidingWindows,
  StreamsBuilder,
  TimeWindows,
  TopologyError,
  TopologyTestDriver,
  type KGroupedStream,
} from "../../src/streams";
import { encodeKey, encodeTime } from "../../src/streams/state/key-codec";
import { restoredWrites } from "../../src/streams/state/time-keyed-changelog";
import { TimeKeyedStore } from "../../src/streams/state/time-keyed-store";
import { MINUTE_MS, pageViewsTopology, type RegionMinute } from "../../examples/page-views/topology";

const str = { key: Serdes.string(), value: Serdes.string() };

/** `in` (1 partition) grouped by key, aggregated by `aggregate`, updates written to `out`. */
function windowed(aggregate: (grouped: KGroupedStream<string, string>) => { toStream(): { to(topic: string): void } }, topics: Record<string, number> = {}) {
  const builder = new StreamsBuilder();
  aggregate(builder.stream("in", str).groupByKey()).toStream().to("out");
  const topology = builder.build({ applicationId: "win", topics: { in: 1, out: 1, ...topics } });
  return { topology, driver: new TopologyTestDriver(topology) };
}

const pipeAll = (driver: TopologyTestDriver, records: [string, number][]) => records.forEach(([key, timestamp]) => driver.pipe("in", key, "x", { timestamp }));
const out = (driver: TopologyTestDriver) => driver.records("out").map((r) => [r.key, r.value]);

describe("tumbling and hopping windows", () => {
  it("count per key and window, keyed by Windowed<K> (end exclusive) on the output topic and in the window store", () => {
    const { driver } = windowed((g) => g.windowedBy(TimeWindows.ofSizeWithNoGrace(10)).count(Materialized.as("counts", { retentionMs: 100 })));
    pipeAll(driver, [
      ["a", 1],
      ["a", 9],
      ["b", 5],
      ["a", 10],
      ["a", 19],
    ]);
    expect(out(driver)).toEqual([
      ["a@0/10", "1"],
      ["a@0/10", "2"],
      ["b@0/10", "1"],
      ["a@10/20", "1"],
      ["a@10/20", "2"],
    ]);
    expect(driver.windows<string, number>("counts", "a")).toEqual([
      { window: { start: 0, end: 10 }, value: 2 },
      { window: { start: 10, end: 20 }, value: 2 },
    ]);
    expect(driver.windows("counts", "a", 5, 10)).toEqual([{ window: { start: 10, end: 20 }, value: 2 }]);
  });

  it("hopping windows put a record in every window that covers it, none starting before 0", () => {
    const { driver } = windowed((g) => g.windowedBy(TimeWindows.ofSizeWithNoGrace(10).advanceBy(5)).reduce((a, b) => a + b, Materialized.as("hops")));
    driver.pipe("in", "k", "a", { timestamp: 3 });
    driver.pipe("in", "k", "b", { timestamp: 7 });
    driver.pipe("in", "k", "c", { timestamp: 12 });
    expect(out(driver)).toEqual([
      ["k@0/10", "a"],
      ["k@0/10", "ab"],
      ["k@5/15", "b"],
      ["k@5/15", "bc"],
      ["k@10/20", "c"],
    ]);
  });

  it("accepts out-of-order records within the grace period and drops (and counts) later ones", () => {
    const { driver } = windowed((g) => g.windowedBy(TimeWindows.ofSizeAndGrace(10, 5)).count(Materialized.as("counts", { retentionMs: 100 })));
    pipeAll(driver, [
      ["a", 3],
      ["a", 14],
      ["a", 4],
    ]);
    // Stream time 14 < end 10 + grace 5: window [0, 10) is still open.
    expect(driver.windows("counts", "a", 0, 0)).toEqual([{ window: { start: 0, end: 10 }, value: 2 }]);
    pipeAll(driver, [
      ["b", 15],
      ["a", 5],
    ]);
    expect(driver.windows("counts", "a", 0, 0)).toEqual([{ window: { start: 0, end: 10 }, value: 2 }]);
    expect(driver.tasks.get("0_0")!.eventMetrics.lateRecordsDropped).toBe(1);
    expect(driver.tasks.get("0_0")!.metrics.processedRecords).toBe(5);
  });

  it("deletes windows past retention through the changelog (tombstones), and keeps them longer when asked", () => {
    const { driver, topology } = windowed((g) => g.windowedBy(TimeWindows.ofSizeAndGrace(10, 5)).count(Materialized.as("counts")));
    pipeAll(driver, [
      ["a", 1],
      ["b", 12],
      ["b", 19],
    ]);
    // Retention (size 10 + grace 5) counts from the latest window start, 10, as Kafka's window stores count it.
    expect(driver.windows("counts", "a")).toHaveLength(1);
    pipeAll(driver, [["b", 20]]);
    // The latest window starts at 20 = 0 + retention 15 + 5: window [0, 10) of every key is gone.
    expect(driver.windows("counts", "a")).toEqual([]);
    const changelog = driver.records(changelogTopicName("win", "counts"), 0);
    // One tombstone per window gone, of its data row (the index and meta rows are rebuilt from the data rows' records).
    expect(changelog.filter((r) => r.value === null).map((r) => r.key![0])).toEqual(["d"]);
    const replayed = new InMemoryStoreBackend().keyValue("counts");
    for (const r of changelog)
      for (const w of restoredWrites(r.key!, r.value, r.timestamp, r.headers)) w.value === null ? replayed.delete(w.key) : replayed.put(w.key, w.value);
    expect(replayed.range()).toEqual(driver.backends.get("0_0")!.keyValue("counts").range());
    expect(topology.store("counts")!.kind).toBe("window");

    const kept = windowed((g) => g.windowedBy(TimeWindows.ofSizeAndGrace(10, 5)).count(Materialized.as("counts", { retentionMs: 100 })));
    pipeAll(kept.driver, [
      ["a", 1],
      ["b", 15],
      ["b", 60],
    ]);
    expect(kept.driver.windows("counts", "a")).toEqual([{ window: { start: 0, end: 10 }, value: 1 }]);
    expect(() => windowed((g) => g.windowedBy(TimeWindows.ofSizeAndGrace(10, 5)).count(Materialized.as("c", { retentionMs: 14 })))).toThrow(TopologyError);
  });

  it("rejects impossible window specifications", () => {
    expect(() => TimeWindows.ofSizeWithNoGrace(10).advanceBy(11)).toThrow(TopologyError);
    expect(() => TimeWindows.ofSizeAndGrace(0, 1)).toThrow(TopologyError);
    expect(() => SessionWindows.ofInactivityGapAndGrace(5, -1)).toThrow(TopologyError);
  });
});

describe("sliding windows", () => {
  it("make one window per distinct set of records within the time difference (inclusive ends)", () => {
    const { driver } = windowed((g) => g.windowedBy(SlidingWindows.ofTimeDifferenceWithNoGrace(10)).count(Materialized.as("sliding")));
    pipeAll(driver, [
      ["a", 5],
      ["a", 12],
    ]);
    expect(out(driver)).toEqual([
      ["a@0/10", "1"], // an early record's window starts at 0
      ["a@6/16", "1"], // the window starting just after 5 holds 12 only
      ["a@2/12", "2"], // the window ending at 12 holds 5 and 12
    ]);
    pipeAll(driver, [["a", 30]]);
    expect(out(driver).slice(3)).toEqual([["a@20/30", "1"]]);
    // Kept for queries: windows starting within the retention (2 × difference + grace, as Kafka's)
    // of the latest window start, 20; the one starting at 0 is gone.
    expect(driver.windows("sliding", "a")).toEqual([
      { window: { start: 2, end: 12 }, value: 2 },
      { window: { start: 6, end: 16 }, value: 1 },
      { window: { start: 20, end: 30 }, value: 1 },
    ]);
  });

  it("fold an out-of-order record into every window it enters, in arrival order, and create the one starting after it", () => {
    const { driver } = windowed((g) =>
      g.windowedBy(SlidingWindows.ofTimeDifferenceAndGrace(10, 10)).aggregate(
        () => "",
        (_k, v, agg) => agg + v,
        Materialized.as("sliding"),
      ),
    );
    driver.pipe("in", "a", "x", { timestamp: 20 });
    driver.pipe("in", "a", "y", { timestamp: 15 });
    expect(out(driver)).toEqual([
      ["a@10/20", '"x"'],
      ["a@10/20", '"xy"'],
      ["a@5/15", '"y"'],
      ["a@16/26", '"x"'],
    ]);
  });
});

describe("session windows", () => {
  it("merge sessions within the gap, deleting merged-away sessions with tombstones", () => {
    const { driver } = windowed((g) => g.windowedBy(SessionWindows.ofInactivityGapAndGrace(10, 100)).count(Materialized.as("sessions")));
    pipeAll(driver, [
      ["a", 0],
      ["a", 5],
      ["a", 30],
      ["a", 20],
      ["a", 12],
    ]);
    expect(out(driver)).toEqual([
      ["a@0/0", "1"],
      ["a@0/0", null],
      ["a@0/5", "2"],
      ["a@30/30", "1"],
      ["a@30/30", null],
      ["a@20/30", "2"],
      ["a@0/5", null],
      ["a@20/30", null],
      ["a@0/30", "5"],
    ]);
    expect(driver.sessions("sessions", "a")).toEqual([{ window: { start: 0, end: 30 }, value: 5 }]);
  });

  it("merge aggregates with the merger from the initializer's value, and drop records that would only reopen closed sessions", () => {
    const { driver } = windowed((g) =>
      g.windowedBy(SessionWindows.ofInactivityGapAndGrace(10, 20)).aggregate(
        () => "",
        (_k, v, agg) => agg + v,
        (_k, left, right) => `${left}+${right}`,
        Materialized.as("s"),
      ),
    );
    driver.pipe("in", "a", "p", { timestamp: 0 });
    driver.pipe("in", "a", "q", { timestamp: 16 });
    driver.pipe("in", "a", "r", { timestamp: 8 });
    expect(driver.sessions("s", "a")).toEqual([{ window: { start: 0, end: 16 }, value: "+p+qr" }]);
    driver.pipe("in", "a", "s", { timestamp: 100 });
    driver.pipe("in", "a", "t", { timestamp: 20 });
    expect(driver.tasks.get("0_0")!.eventMetrics.lateRecordsDropped).toBe(1);
    expect(driver.sessions("s", "a").map((s) => s.value)).toEqual(["s"]);
  });
});

describe("window store layout", () => {
  it("keeps keys that prefix each other or hold the escape character apart, in byte order of time", () => {
    const raw = new InMemoryStoreBackend().keyValue("w");
    const store = new TimeKeyedStore(raw);
    const keys = ["a", "a\u0001", "a\u0001\u0001", "ab", "a\u0000", "", "\u{1F600}"];
    keys.forEach((key, i) => {
      store.put(key, 5, 15, `${i}@5`);
      store.put(key, 100, 110, `${i}@100`);
    });
    keys.forEach((key, i) => {
      expect(store.fetch(key, 0, 1000).map((e) => e.value)).toEqual([`${i}@5`, `${i}@100`]);
      expect(fetchWindows(raw, key, 6, 100)).toEqual([{ window: { start: 100, end: 110 }, value: `${i}@100` }]);
    });
    // Expiry reads the time index across keys and deletes entries and index rows.
    expect(store.takeBefore(100).map((e) => e.key)).toEqual([...keys].sort((a, b) => compareKeys(encodeKey(a), encodeKey(b))));
    expect(raw.size).toBe(keys.length * 2);
    expect(compareKeys(encodeTime(9), encodeTime(10))).toBeLessThan(0);
    expect(compareKeys(encodeTime(999_999_999_999), encodeTime(1_000_000_000_000))).toBeLessThan(0);
  });

  it("answers interactive queries from the raw store: windows by start range, sessions overlapping a range", () => {
    const { driver } = windowed((g) => g.windowedBy(SessionWindows.ofInactivityGapAndGrace(5, 1000)).count(Materialized.as("s")));
    pipeAll(driver, [
      ["k", 10],
      ["k", 12],
      ["k", 40],
    ]);
    const raw = driver.backends.get("0_0")!.keyValue("s");
    expect(fetchSessions(raw, "k")).toEqual([
      { window: { start: 10, end: 12 }, value: "2" },
      { window: { start: 40, end: 40 }, value: "1" },
    ]);
    expect(fetchSessions(raw, "k", 13, 100)).toEqual([{ window: { start: 40, end: 40 }, value: "1" }]);
    expect(fetchSessions(raw, "k", 0, 11)).toEqual([{ window: { start: 10, end: 12 }, value: "2" }]);
  });
});

describe("restoring window and session stores", () => {
  it.each([
    ["window", (g: KGroupedStream<string, string>) => g.windowedBy(TimeWindows.ofSizeAndGrace(10, 5)).count(Materialized.as("agg"))],
    ["sliding", (g: KGroupedStream<string, string>) => g.windowedBy(SlidingWindows.ofTimeDifferenceAndGrace(10, 5)).count(Materialized.as("agg"))],
    ["session", (g: KGroupedStream<string, string>) => g.windowedBy(SessionWindows.ofInactivityGapAndGrace(10, 5)).count(Materialized.as("agg"))],
  ])("a %s store replayed from its changelog continues exactly where the old task was", (_kind, aggregate) => {
    const before: [string, number][] = [
      ["a", 1],
      ["b", 4],
      ["a", 8],
      ["a", 17],
      ["b", 21],
    ];
    // After the restore: on time, late (stream time must have survived), and window-closing records.
    const after: [string, number][] = [
      ["b", 10],
      ["a", 12],
      ["b", 3],
      ["a", 9],
      ["a", 25],
      ["b", 40],
      ["a", 41],
      ["a", 2],
    ];
    const reference = windowed(aggregate).driver;
    pipeAll(reference, [...before, ...after]);
    const restored = windowed(aggregate).driver;
    pipeAll(restored, before);
    restored.restoreTask("0_0");
    pipeAll(restored, after);

    expect(out(restored)).toEqual(out(reference));
    expect(restored.backends.get("0_0")!.keyValue("agg").range()).toEqual(reference.backends.get("0_0")!.keyValue("agg").range());
    expect(restored.tasks.get("0_0")!.eventMetrics.lateRecordsDropped).toBeGreaterThan(0);
    expect(reference.tasks.get("0_0")!.eventMetrics.lateRecordsDropped).toBe(restored.tasks.get("0_0")!.eventMetrics.lateRecordsDropped);
  });
});

describe("the page-views example", () => {
  it("publishes the final view count of each region and minute, with the region's name", () => {
    const topology = pageViewsTopology();
    expect(topology.store("views-per-minute")!.kind).toBe("window");
    expect(topology.store("final-minutes")!.kind).toBe("buffer");
    const driver = new TopologyTestDriver(topology);
    driver.pipe("regions", "eu", JSON.stringify({ name: "Europe" }));
    driver.pipe("regions", "us", JSON.stringify({ name: "Americas" }));
    const view = (user: string, region: string, timestamp: number) => driver.pipe("page-views", user, JSON.stringify({ region, page: "/" }), { timestamp });
    view("ann", "eu", 1_000);
    view("bob", "eu", 30_000);
    view("cat", "us", 59_999);
    view("dan", "eu", MINUTE_MS + 5_000); // stream time of eu's task: 65 000 < 60 000 + grace 10 000
    view("eve", "eu", 50_000); // late but within grace: still counts in minute 0
    expect(driver.records("page-views-per-region")).toEqual([]);
    view("fay", "eu", MINUTE_MS + 10_000); // minute 0 of eu closes
    view("gus", "us", 3 * MINUTE_MS); // minute 0 of us closes
    view("hal", "eu", 20_000); // too late: dropped

    const published = driver
      .records("page-views-per-region")
      .map((r) => [r.key, JSON.parse(r.value!) as RegionMinute])
      .sort(([a], [b]) => String(a).localeCompare(String(b)));
    expect(published).toEqual([
      ["eu", { region: "Europe", windowStart: 0, windowEnd: MINUTE_MS, views: 3 }],
      ["us", { region: "Americas", windowStart: 0, windowEnd: MINUTE_MS, views: 1 }],
    ]);
    for (const [region] of published)
      expect(driver.records("page-views-per-region", partitionForKey(region as string, 4)).some((r) => r.key === region)).toBe(true);
    // The window store answers queries for minutes still open and closed ones within retention.
    expect(driver.windows("views-per-minute", "eu")).toEqual([
      { window: { start: 0, end: MINUTE_MS }, value: 3 },
      { window: { start: MINUTE_MS, end: 2 * MINUTE_MS }, value: 2 },
    ]);
  });
});
