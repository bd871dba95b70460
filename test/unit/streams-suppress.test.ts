import { describe, expect, it } from "vitest";
import {
  BufferConfig,
  changelogTopicName,
  Materialized,
  Serdes,
  SessionWindows,
  StreamsBuilder,
  Suppressed,
  TimeWindows,
  TopologyError,
  TopologyTestDriver,
  type KGroupedStream,
  type KTable,
  type Windowed,
} from "../../src/streams";

const str = { key: Serdes.string(), value: Serdes.string() };

function suppressed<V, T extends null>(table: (grouped: KGroupedStream<string, string>) => KTable<Windowed<string>, V, T>) {
  const builder = new StreamsBuilder();
  table(builder.stream("in", str).groupByKey())
    .suppress(Suppressed.untilWindowCloses({ name: "final" }))
    .toStream()
    .to("out");
  return new TopologyTestDriver(builder.build({ applicationId: "sup", topics: { in: 1, out: 1 } }));
}

const pipeAll = (driver: TopologyTestDriver, records: [string, number][]) => {
  for (const [key, timestamp] of records) driver.pipe("in", key, "x", { timestamp });
};
const out = (driver: TopologyTestDriver) => driver.records("out").map((r) => [r.key, r.value]);
const tumblingCounts = (g: KGroupedStream<string, string>) => g.windowedBy(TimeWindows.ofSizeAndGrace(10, 5)).count(Materialized.as("counts"));

describe("suppress(untilWindowCloses)", () => {
  it("emits each window once, with its final value, when stream time reaches end + grace", () => {
    const driver = suppressed(tumblingCounts);
    pipeAll(driver, [
      ["a", 1],
      ["a", 3],
      ["b", 4],
      ["a", 12],
      ["a", 14],
      ["a", 9],
    ]);
    expect(out(driver)).toEqual([]);
    pipeAll(driver, [["c", 15]]);
    expect(out(driver)).toEqual([
      ["a@0/10", "3"],
      ["b@0/10", "1"],
    ]);
    pipeAll(driver, [
      ["a", 2],
      ["a", 26],
    ]); // the first is late: no second result for a@0/10
    expect(out(driver).slice(2)).toEqual([
      ["a@10/20", "2"],
      ["c@10/20", "1"],
    ]);
    // The buffer held the pending windows; what it emitted it deleted, through the changelog: one
    // tombstone per emitted window, of its data row (the index rows are not logged, see time-keyed-changelog.ts).
    const changelog = driver.records(changelogTopicName("sup", "final"), 0);
    const tombstones = changelog.filter((r) => r.value === null).map((r) => r.key!);
    expect(tombstones).toHaveLength(4);
    expect(tombstones.every((key) => key.startsWith("d"))).toBe(true);
    expect(Object.keys(driver.backends.get("0_0")!.contents("final")).filter((k) => k.startsWith("d"))).toHaveLength(1);
  });

  it("emits only the final session: merged-away sessions never leave the buffer", () => {
    const driver = suppressed((g) => g.windowedBy(SessionWindows.ofInactivityGapWithNoGrace(10)).count(Materialized.as("sessions")));
    pipeAll(driver, [
      ["a", 0],
      ["a", 5],
      ["b", 7],
      ["a", 100],
    ]);
    expect(out(driver)).toEqual([
      ["a@0/5", "2"],
      ["b@7/7", "1"],
    ]);
    pipeAll(driver, [["a", 111]]);
    expect(out(driver).slice(2)).toEqual([["a@100/100", "1"]]);
  });

  it("works on derived windowed tables; a filtered-out window is simply never emitted", () => {
    const driver = suppressed((g) =>
      tumblingCounts(g)
        .filter((_w, count) => count >= 2)
        .mapValues((count) => `${count} records`),
    );
    // Only updates that pass the filter reach suppress and move its stream time (the filter, which
    // has old values, drops z's first count as Kafka's does): z's second record closes the windows.
    pipeAll(driver, [
      ["a", 1],
      ["a", 2],
      ["b", 3],
      ["c", 4],
      ["c", 5],
      ["c", 6],
      ["z", 40],
    ]);
    expect(out(driver)).toEqual([]);
    pipeAll(driver, [["z", 41]]);
    expect(out(driver)).toEqual([
      ["a@0/10", '"2 records"'],
      ["c@0/10", '"3 records"'],
    ]);
  });

  it("needs a windowed table", () => {
    const builder = new StreamsBuilder();
    const table = builder.stream("in", str).groupByKey().count();
    expect(() => table.suppress(Suppressed.untilWindowCloses())).toThrow(TopologyError);
  });

  it("a buffer replayed from its changelog emits exactly what the old one would have", () => {
    const before: [string, number][] = [
      ["a", 1],
      ["b", 2],
      ["a", 11],
      ["b", 16],
    ];
    const after: [string, number][] = [
      ["a", 12],
      ["a", 3],
      ["b", 25],
      ["c", 50],
    ];
    const run = (restore: boolean) => {
      const driver = suppressed(tumblingCounts);
      pipeAll(driver, before);
      if (restore) driver.restoreTask("0_0");
      pipeAll(driver, after);
      return driver;
    };
    const reference = run(false);
    const restored = run(true);
    expect(out(restored)).toEqual([
      ["a@0/10", "1"],
      ["b@0/10", "1"],
      ["a@10/20", "2"],
      ["b@10/20", "1"],
      ["b@20/30", "1"],
    ]);
    expect(out(restored)).toEqual(out(reference));
    expect(restored.backends.get("0_0")!.contents("final")).toEqual(reference.backends.get("0_0")!.contents("final"));
  });
});

describe("suppress(untilTimeLimit) and bounded buffers", () => {
  /** Latest value per key of `in` (a table), suppressed to `out`. */
  function limited(suppressed: Suppressed) {
    const builder = new StreamsBuilder();
    builder.table("in", str).suppress(suppressed.withName("held")).toStream().to("out");
    return new TopologyTestDriver(builder.build({ applicationId: "sup", topics: { in: 1, out: 1 } }));
  }
  const put = (driver: TopologyTestDriver, records: [string, string | null, number][]) => {
    for (const [key, value, timestamp] of records) driver.pipe("in", key, value, { timestamp });
  };
  const emitted = (driver: TopologyTestDriver) => driver.records("out").map((r) => [r.key, r.value, r.timestamp]);

  it("holds a key at its first update's time, emits its latest value (or tombstone) once the limit passed", () => {
    const driver = limited(Suppressed.untilTimeLimit(10, BufferConfig.unbounded()));
    put(driver, [
      ["a", "1", 0],
      ["b", "1", 5],
      ["a", "2", 9],
      ["a", null, 10],
    ]);
    expect(emitted(driver)).toEqual([["a", null, 10]]);
    put(driver, [
      ["b", "2", 14],
      ["c", "1", 15],
    ]);
    expect(emitted(driver).slice(1)).toEqual([["b", "2", 14]]);
  });

  it("emits the oldest entries early when an eager buffer is over its record limit", () => {
    const driver = limited(Suppressed.untilTimeLimit(1_000, BufferConfig.maxRecords(2)));
    put(driver, [
      ["a", "1", 0],
      ["b", "1", 1],
      ["a", "2", 2],
      ["c", "1", 3],
    ]);
    expect(emitted(driver)).toEqual([["a", "2", 2]]);
  });

  it("stops the task when a strict buffer is full: untilWindowCloses with a record limit", () => {
    const builder = new StreamsBuilder();
    tumblingCounts(builder.stream("in", str).groupByKey())
      .suppress(Suppressed.untilWindowCloses(BufferConfig.maxRecords(2).shutDownWhenFull()))
      .toStream()
      .to("out");
    const driver = new TopologyTestDriver(builder.build({ applicationId: "sup", topics: { in: 1, out: 1 } }));
    pipeAll(driver, [
      ["a", 1],
      ["b", 2],
      ["a", 3],
    ]);
    expect(() => pipeAll(driver, [["c", 4]])).toThrow(/buffer exceeded its max capacity. Currently \[3\/2\] records/);
  });

  it("a bounded buffer replayed from its changelog counts what it holds and keeps first-arrival times", () => {
    const run = (restore: boolean) => {
      const driver = limited(Suppressed.untilTimeLimit(100, BufferConfig.maxRecords(2)));
      put(driver, [
        ["a", "1", 0],
        ["b", "1", 50],
        ["a", "2", 60],
      ]);
      if (restore) driver.restoreTask("0_0");
      put(driver, [
        ["a", "3", 90],
        ["c", "1", 95],
        ["d", "1", 110],
      ]);
      return driver;
    };
    const reference = run(false);
    const restored = run(true);
    // c makes three entries: a, held since 0, leaves early with its latest value; d makes three
    // again and b leaves (by time, nothing is due before 100 ms after its first update).
    expect(emitted(restored)).toEqual([
      ["a", "3", 90],
      ["b", "1", 50],
    ]);
    expect(emitted(restored)).toEqual(emitted(reference));
    expect(restored.backends.get("0_0")!.contents("held")).toEqual(reference.backends.get("0_0")!.contents("held"));
  });
});
