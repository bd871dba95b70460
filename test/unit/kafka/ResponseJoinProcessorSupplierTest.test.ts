/**
 * Ported from Kafka Streams' ResponseJoinProcessorSupplierTest (foreignkeyjoin): how the left side
 * of a foreign-key join treats an answer — dropped (and counted) when its hash is not that of the
 * left row as it is now (Kafka's out-of-order check), joined when it is, a tombstone for a missing
 * right row in an inner join, the left row joined with null in a left join. Kafka drives the
 * processor with a hand-made value getter; here the left table holds the row, and the answer is
 * written to the join's response topic as the right side would write it.
 */
import { describe, expect, it } from "vitest";
import { StreamsBuilder, TopologyTestDriver } from "../../../src/streams";
import { valueHash } from "../../../src/streams/dsl/foreign-key-join/wrappers";
import { droppedRecordsTotal, kvt, MockApiProcessorSupplier, STRING, TestInputTopic } from "./support";

const JOINER = (value1: string, value2: string | null) => `(${value1},${value2})`;

function setUp(leftJoin: boolean, lhs1: string | null) {
  const builder = new StreamsBuilder();
  const left = builder.table("left", { key: STRING, value: STRING });
  const right = builder.table("right", { key: STRING, value: STRING });
  // Every left row names a right key that never exists: only the answers written below join.
  const extractor = () => "no-such-rhs";
  const joined = leftJoin ? left.leftJoin(right, extractor, JOINER) : left.join(right, extractor, JOINER);
  const forwarded = new MockApiProcessorSupplier<string, string | null>();
  joined.toStream().process(forwarded.supplier);
  const topology = builder.build({ applicationId: "fk", topics: { left: 1, right: 1 } });
  const responseTopic = topology.subtopologies.flatMap((s) => s.repartitionSourceTopics).find((t) => t.endsWith("-subscription-response-repartition"))!;
  const driver = new TopologyTestDriver(topology);
  if (lhs1 !== null) new TestInputTopic(driver, "left", STRING, STRING).pipeInput("lhs1", lhs1, 0);
  forwarded.processed.splice(0);
  const droppedBefore = droppedRecordsTotal(driver);
  return {
    forwarded,
    dropped: () => droppedRecordsTotal(driver) - droppedBefore,
    /** An answer for lhs1, as the right side writes it to the response topic. */
    respond: (hash: string | null, foreignValue: string | null) =>
      driver.pipe(responseTopic, "lhs1", JSON.stringify({ h: hash, v: foreignValue, p: 0 }), { partition: 0, timestamp: 0 }),
  };
}

describe("ResponseJoinProcessorSupplierTest", () => {
  it("shouldNotForwardWhenHashDoesNotMatch", () => {
    const t = setUp(false, "lhsValue");
    const oldHash = valueHash("oldLhsValue");
    t.respond(oldHash, "rhsValue");
    t.forwarded.checkAndClearProcessResult();
    // test dropped-records sensors
    expect(t.dropped()).toBe(1);
  });

  it("shouldIgnoreUpdateWhenLeftHasBecomeNull", () => {
    const t = setUp(false, null);
    t.respond(valueHash("lhsValue"), "rhsValue");
    t.forwarded.checkAndClearProcessResult();
    expect(t.dropped()).toBe(1);
  });

  it("shouldForwardWhenHashMatches", () => {
    const t = setUp(false, "lhsValue");
    t.respond(valueHash("lhsValue"), "rhsValue");
    t.forwarded.checkAndClearProcessResult(kvt("lhs1", "(lhsValue,rhsValue)", 0));
  });

  it("shouldEmitTombstoneForInnerJoinWhenRightIsNull", () => {
    const t = setUp(false, "lhsValue");
    t.respond(valueHash("lhsValue"), null);
    t.forwarded.checkAndClearProcessResult(kvt("lhs1", null, 0));
  });

  it("shouldEmitResultForLeftJoinWhenRightIsNull", () => {
    const t = setUp(true, "lhsValue");
    t.respond(valueHash("lhsValue"), null);
    t.forwarded.checkAndClearProcessResult(kvt("lhs1", "(lhsValue,null)", 0));
  });

  it("shouldEmitTombstoneForLeftJoinWhenRightIsNullAndLeftIsNull", () => {
    const t = setUp(true, null);
    t.respond(null, null);
    t.forwarded.checkAndClearProcessResult(kvt("lhs1", null, 0));
  });
});
