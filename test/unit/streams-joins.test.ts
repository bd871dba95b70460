import { describe, expect, it } from "vitest";
import { partitionForKey } from "../../src/log/partitioner";
import { JoinWindows, Materialized, Serdes, StreamsBuilder, TopologyError, TopologyTestDriver, type KStream, type KTable } from "../../src/streams";

const str = { key: Serdes.string(), value: Serdes.string() };
const out = (driver: TopologyTestDriver, topic = "out") => driver.records(topic).map((r) => [r.key, r.value === null ? null : JSON.parse(r.value)]);

describe("stream-table joins", () => {
  function clicksWithUsers(kind: "join" | "leftJoin") {
    const builder = new StreamsBuilder();
    const users = builder.table("users", str);
    const clicks = builder.stream("clicks", str);
    const joined = kind === "join" ? clicks.join(users, (page, name) => `${name}:${page}`) : clicks.leftJoin(users, (page, name) => `${name ?? "?"}:${page}`);
    joined.to("out");
    return new TopologyTestDriver(builder.build({ applicationId: "st", topics: { users: 2, clicks: 2, out: 2 } }));
  }

  it("inner: each click joins the user's current row; clicks without a row produce nothing", () => {
    const driver = clicksWithUsers("join");
    driver.pipe("clicks", "u1", "/early");
    driver.pipe("users", "u1", "ann");
    driver.pipe("clicks", "u1", "/a");
    driver.pipe("users", "u1", "anna");
    driver.pipe("clicks", "u1", "/b");
    driver.pipe("users", "u1", null);
    driver.pipe("clicks", "u1", "/gone");
    expect(driver.records("out").map((r) => [r.key, r.value])).toEqual([
      ["u1", '"ann:/a"'],
      ["u1", '"anna:/b"'],
    ]);
  });

  it("left: clicks without a row join null; table updates alone produce nothing", () => {
    const driver = clicksWithUsers("leftJoin");
    driver.pipe("clicks", "u2", "/x");
    driver.pipe("users", "u2", "bob");
    driver.pipe("clicks", "u2", "/y");
    expect(out(driver)).toEqual([
      ["u2", "?:/x"],
      ["u2", "bob:/y"],
    ]);
  });

  it("repartitions a stream whose key changed, to the task that owns the table's key", () => {
    const builder = new StreamsBuilder();
    const users = builder.table("users", str, Materialized.as("users"));
    builder
      .stream("orders", { key: Serdes.string(), value: Serdes.json<{ user: string; item: string }>() })
      .selectKey((_id, order) => order.user)
      .join(users, (order, name) => `${name} bought ${order.item}`, { key: Serdes.string(), name: "orders-by-user" })
      .to("out");
    const topology = builder.build({ applicationId: "rp", topics: { users: 3, orders: 3, out: 3 } });
    expect(topology.subtopologies.map((s) => s.repartitionSourceTopics)).toEqual([["rp-orders-by-user-repartition"], []]);
    const driver = new TopologyTestDriver(topology);
    for (const [id, name] of [
      ["u1", "ann"],
      ["u2", "bob"],
      ["u3", "cid"],
    ])
      driver.pipe("users", id!, name!);
    for (const [order, user] of [
      ["o1", "u1"],
      ["o2", "u3"],
      ["o3", "u2"],
      ["o4", "u9"],
    ])
      driver.pipe("orders", order!, JSON.stringify({ user, item: order }));
    const joined = driver.records("out");
    expect(joined.map((r) => JSON.parse(r.value!)).sort()).toEqual(["ann bought o1", "bob bought o3", "cid bought o2"]);
    for (const record of joined) expect(record.partition).toBe(partitionForKey(record.key!, 3));
  });
});

describe("co-partitioning", () => {
  it.each([
    [
      "stream-table",
      (b: StreamsBuilder) =>
        b
          .stream("a", str)
          .join(b.table("b", str), (x, y) => x + y)
          .to("out"),
    ],
    [
      "stream-stream",
      (b: StreamsBuilder) =>
        b
          .stream("a", str)
          .join(b.stream("b", str), (x, y) => x + y, JoinWindows.ofTimeDifferenceWithNoGrace(5))
          .to("out"),
    ],
    [
      "table-table",
      (b: StreamsBuilder) =>
        b
          .table("a", str)
          .join(b.table("b", str), (x, y) => x + y)
          .toStream()
          .to("out"),
    ],
  ])("a %s join of topics with different partition counts is a TopologyError", (_kind, write) => {
    const builder = new StreamsBuilder();
    write(builder);
    expect(() => builder.build({ applicationId: "cp", topics: { a: 2, b: 3, out: 1 } })).toThrow(TopologyError);
    expect(() => builder.build({ applicationId: "cp", topics: { a: 2, b: 3, out: 1 } })).toThrow(
      /a \(2 partitions\), b \(3 partitions\)|b \(3 partitions\).*a \(2 partitions\)/,
    );
    expect(builder.build({ applicationId: "cp", topics: { a: 3, b: 3, out: 1 } }).subtopologies).toHaveLength(1);
  });
});

describe("table-table joins", () => {
  function tables(join: (left: KTable<string, string>, right: KTable<string, string>) => KTable<string, string, null>) {
    const builder = new StreamsBuilder();
    join(builder.table("left", str), builder.table("right", str)).toStream().to("out");
    return new TopologyTestDriver(builder.build({ applicationId: "tt", topics: { left: 1, right: 1, out: 1 } }));
  }
  const script = (driver: TopologyTestDriver) => {
    driver.pipe("left", "k", "L1");
    driver.pipe("right", "k", "R1");
    driver.pipe("left", "k", "L2");
    driver.pipe("left", "k", null);
    driver.pipe("right", "k", null);
    driver.pipe("right", "j", "R9");
  };

  it("inner: a result only while both rows exist, a tombstone when one goes", () => {
    const driver = tables((l, r) => l.join(r, (a, b) => `${a}+${b}`));
    script(driver);
    expect(out(driver)).toEqual([
      ["k", "L1+R1"],
      ["k", "L2+R1"],
      ["k", null],
    ]);
  });

  it("left: every left row, joined with the right row or null", () => {
    const driver = tables((l, r) => l.leftJoin(r, (a, b) => `${a}+${b ?? "-"}`));
    script(driver);
    expect(out(driver)).toEqual([
      ["k", "L1+-"],
      ["k", "L1+R1"],
      ["k", "L2+R1"],
      ["k", null],
    ]);
  });

  it("outer: every row of either side; a tombstone once both are gone", () => {
    const driver = tables((l, r) => l.outerJoin(r, (a, b) => `${a ?? "-"}+${b ?? "-"}`));
    script(driver);
    expect(out(driver)).toEqual([
      ["k", "L1+-"],
      ["k", "L1+R1"],
      ["k", "L2+R1"],
      ["k", "-+R1"],
      ["k", null],
      ["j", "-+R9"],
    ]);
  });

  it("materializes the result when asked, so it can be queried", () => {
    const driver = tables((l, r) => l.outerJoin(r, (a, b) => `${a ?? "-"}+${b ?? "-"}`, Materialized.as("joined", { value: Serdes.string() })));
    script(driver);
    expect(driver.backends.get("0_0")!.contents("joined")).toEqual({ j: "-+R9" });
  });
});

describe("windowed stream-stream joins", () => {
  type Kind = "join" | "leftJoin" | "outerJoin";
  function streams(kind: Kind, windows = JoinWindows.ofTimeDifferenceAndGrace(10, 5)) {
    const builder = new StreamsBuilder();
    const left: KStream<string, string> = builder.stream("left", str);
    const right: KStream<string, string> = builder.stream("right", str);
    const joiner = (a: string | null, b: string | null) => `${a ?? "-"}+${b ?? "-"}`;
    const joined =
      kind === "join"
        ? left.join(right, joiner, windows)
        : kind === "leftJoin"
          ? left.leftJoin(right, joiner, windows)
          : left.outerJoin(right, joiner, windows);
    joined.to("out");
    const topology = builder.build({ applicationId: "ss", topics: { left: 1, right: 1, out: 1 } });
    return { topology, driver: new TopologyTestDriver(topology) };
  }
  const pipe = (driver: TopologyTestDriver, topic: string, key: string, value: string, timestamp: number) => driver.pipe(topic, key, value, { timestamp });

  it("inner: pairs records of the same key whose timestamps differ by at most the difference, either order", () => {
    const { driver, topology } = streams("join");
    expect(topology.subtopologies[0]!.stores.map((s) => [s.name, s.kind])).toEqual([
      [expect.stringMatching(/-this-join-store$/), "buffer"],
      [expect.stringMatching(/-other-join-store$/), "buffer"],
    ]);
    pipe(driver, "left", "k", "a", 100);
    pipe(driver, "right", "k", "x", 105);
    pipe(driver, "right", "k", "y", 111); // 11 apart from a: no pair
    pipe(driver, "left", "k", "b", 101); // pairs with x (4) and y (10)
    pipe(driver, "right", "j", "z", 101); // another key
    expect(driver.records("out").map((r) => [r.key, JSON.parse(r.value!), r.timestamp])).toEqual([
      ["k", "a+x", 105],
      ["k", "b+x", 105],
      ["k", "b+y", 111],
    ]);
  });

  it("left: an unmatched left record is joined with null only once it can no longer find a partner", () => {
    const { driver } = streams("leftJoin");
    pipe(driver, "left", "k", "a", 100);
    pipe(driver, "left", "k", "b", 200);
    // b (200) moves stream time past 100 + 10 (after) + 5 (grace): a can no longer meet a partner on time.
    expect(out(driver)).toEqual([["k", "a+-"]]);
    pipe(driver, "right", "k", "x", 205);
    expect(out(driver)).toEqual([
      ["k", "a+-"],
      ["k", "b+x"],
    ]);
    pipe(driver, "left", "k", "c", 300);
    pipe(driver, "right", "k", "w", 316);
    // c (300) could have met a right record up to 310, on time until 315: now it is final.
    expect(out(driver).slice(2)).toEqual([["k", "c+-"]]);
    // An unmatched right record is not emitted by a left join.
    pipe(driver, "left", "k", "d", 400);
    expect(out(driver).slice(3)).toEqual([]);
  });

  it("outer: unmatched records of both sides, after the fact; a late record still joins, or is joined with null at once", () => {
    const { driver } = streams("outerJoin");
    pipe(driver, "right", "k", "x", 100);
    pipe(driver, "left", "k", "a", 110); // pairs with x
    pipe(driver, "left", "k", "b", 130);
    expect(out(driver)).toEqual([["k", "a+x"]]);
    pipe(driver, "right", "k", "y", 160); // b (130) is final now: 160 > 130 + 10 + 5
    expect(out(driver)).toEqual([
      ["k", "a+x"],
      ["k", "b+-"],
    ]);
    pipe(driver, "right", "k", "z", 118); // late (118 + 10 < 160), but a (110) is still in the left store: they join
    pipe(driver, "left", "k", "late", 140); // late, no partner: joined with null at once
    pipe(driver, "left", "k", "e", 200);
    pipe(driver, "left", "k", "f", 300);
    expect(out(driver).slice(2)).toEqual([
      ["k", "a+z"],
      ["k", "late+-"],
      ["k", "-+y"],
      ["k", "e+-"],
    ]);
    expect(driver.tasks.get("0_0")!.eventMetrics.lateRecordsDropped).toBe(0);
  });

  it("join buffers replayed from their changelogs continue exactly where the old task was", () => {
    const before: [string, string, number][] = [
      ["left", "a", 100],
      ["right", "x", 104], // a+x
      ["right", "y", 125], // no partner yet
    ];
    const after: [string, string, number][] = [
      ["left", "c", 133], // pairs with y, which the restored buffers must hold (and take out of the unjoined ones)
      ["left", "late", 110], // no partner can still come (110 + 10 < 133): joins x (104), which the restored store holds
      ["right", "v", 150], // no partner
      ["left", "d", 300], // v is final: -+v
      ["right", "w", 400], // d is final: d+-
    ];
    const run = (restore: boolean) => {
      const { driver, topology } = streams("outerJoin");
      for (const [topic, value, ts] of before) pipe(driver, topic, "k", value, ts);
      if (restore) driver.restoreTask("0_0");
      for (const [topic, value, ts] of after) pipe(driver, topic, "k", value, ts);
      return { driver, stores: topology.subtopologies[0]!.stores.map((store) => store.name) };
    };
    const reference = run(false);
    const restored = run(true);
    expect(out(restored.driver)).toEqual([
      ["k", "a+x"],
      ["k", "c+y"],
      ["k", "late+x"],
      ["k", "-+v"],
      ["k", "d+-"],
    ]);
    expect(out(restored.driver)).toEqual(out(reference.driver));
    for (const store of reference.stores)
      expect(restored.driver.backends.get("0_0")!.contents(store)).toEqual(reference.driver.backends.get("0_0")!.contents(store));
  });
});
