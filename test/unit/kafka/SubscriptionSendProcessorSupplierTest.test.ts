/**
 * Ported from Kafka Streams' SubscriptionSendProcessorSupplierTest (foreignkeyjoin): which
 * subscriptions the left side of a foreign-key join sends for each change of a left row —
 * keyed by foreign key, with the hash of the new value, an instruction, the primary key and the
 * left partition. Kafka drives the processor with hand-made changes; here a left table gives the
 * same changes (a first value: `Change(v, null)`, a second: `Change(v2, v)`, a delete:
 * `Change(null, v)`, a delete of an absent row: `Change(null, null)`), and the subscriptions are
 * read from the join's subscription topic.
 */
import { describe, expect, it } from "vitest";
import { Serdes, StreamsBuilder, TopologyTestDriver } from "../../../src/streams";
import { subscriptionSerde, valueHash } from "../../../src/streams/dsl/foreign-key-join/wrappers";
import { droppedRecordsTotal, STRING, TestInputTopic } from "./support";

interface LeftValue {
  readonly foreignKey: string | null;
}
const LEFT_VALUE = Serdes.json<LeftValue>();
const pk = "pk";
const fk1 = "fk1";
const fk2 = "fk2";
const hash = (value: LeftValue) => valueHash(LEFT_VALUE.serialize(value));

function setUp(leftJoin: boolean) {
  const builder = new StreamsBuilder();
  const left = builder.table("left", { key: STRING, value: LEFT_VALUE });
  const right = builder.table("right", { key: STRING, value: STRING });
  const extract = (value: LeftValue) => value.foreignKey;
  const joiner = (value: LeftValue, other: string | null) => `${value.foreignKey}+${other}`;
  if (leftJoin) left.leftJoin(right, extract, joiner);
  else left.join(right, extract, joiner);
  const topology = builder.build({ applicationId: "fk", topics: { left: 1, right: 1 } });
  const subscriptionTopic = topology.subtopologies.flatMap((s) => s.sinkTopics).find((t) => t.endsWith("-subscription-registration-repartition"))!;
  const driver = new TopologyTestDriver(topology);
  const input = new TestInputTopic(driver, "left", STRING, LEFT_VALUE);
  const serde = subscriptionSerde(STRING);
  let read = 0;
  return {
    driver,
    pipe: (value: LeftValue | null) => input.pipeInput(pk, value, 0),
    /** The subscriptions sent since the last call, as Kafka's `context.forwarded()`. */
    forwarded: () => {
      const records = driver.records(subscriptionTopic).slice(read);
      read += records.length;
      return records.map((r) => ({ key: r.key === null ? null : STRING.deserialize(r.key), value: serde.deserialize(r.value!), timestamp: r.timestamp }));
    },
  };
}

const subscription = (key: string | null, h: string | null, instruction: string) => ({
  key,
  value: { hash: h, instruction, primaryKey: pk, primaryPartition: 0 },
  timestamp: 0,
});

describe("SubscriptionSendProcessorSupplierTest", () => {
  // Left join tests
  it("leftJoinShouldPropagateNewPrimaryKeyWithNonNullFK", () => {
    const t = setUp(true);
    const leftRecordValue = { foreignKey: fk1 };
    t.pipe(leftRecordValue);
    expect(t.forwarded()).toEqual([subscription(fk1, hash(leftRecordValue), "PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE")]);
  });

  it("leftJoinShouldPropagateNewPrimaryKeyWithNullFK", () => {
    const t = setUp(true);
    const leftRecordValue = { foreignKey: null };
    t.pipe(leftRecordValue);
    expect(t.forwarded()).toEqual([subscription(null, hash(leftRecordValue), "PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE")]);
  });

  it("leftJoinShouldPropagateChangeOfFKFromNonNullToNonNullValue", () => {
    const t = setUp(true);
    t.pipe({ foreignKey: fk1 });
    t.forwarded();
    const leftRecordValue = { foreignKey: fk2 };
    t.pipe(leftRecordValue);
    const forwarded = t.forwarded();
    expect(forwarded).toHaveLength(2);
    expect(forwarded[1]).toEqual(subscription(fk2, hash(leftRecordValue), "PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE"));
  });

  it("leftJoinShouldPropagateNewRecordOfUnchangedFK", () => {
    const t = setUp(true);
    const leftRecordValue = { foreignKey: fk1 };
    t.pipe(leftRecordValue);
    t.forwarded();
    t.pipe(leftRecordValue);
    expect(t.forwarded()).toEqual([subscription(fk1, hash(leftRecordValue), "PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE")]);
  });

  it("leftJoinShouldPropagateChangeOfFKFromNonNullToNullValue", () => {
    const t = setUp(true);
    t.pipe({ foreignKey: fk1 });
    t.forwarded();
    const leftRecordValue = { foreignKey: null };
    t.pipe(leftRecordValue);
    const forwarded = t.forwarded();
    expect(forwarded.length).toBeGreaterThan(0);
    expect(forwarded[0]).toEqual(subscription(fk1, hash(leftRecordValue), "DELETE_KEY_AND_PROPAGATE"));
  });

  it("leftJoinShouldPropagateChangeFromNullFKToNonNullFKValue", () => {
    const t = setUp(true);
    t.pipe({ foreignKey: null });
    t.forwarded();
    const leftRecordValue = { foreignKey: fk1 };
    t.pipe(leftRecordValue);
    expect(t.forwarded()).toEqual([subscription(fk1, hash(leftRecordValue), "PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE")]);
  });

  it("leftJoinShouldPropagateChangeFromNullFKToNullFKValue", () => {
    const t = setUp(true);
    const leftRecordValue = { foreignKey: null };
    t.pipe(leftRecordValue);
    t.forwarded();
    t.pipe(leftRecordValue);
    expect(t.forwarded()).toEqual([subscription(null, hash(leftRecordValue), "PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE")]);
  });

  it("leftJoinShouldPropagateDeletionOfAPrimaryKey", () => {
    const t = setUp(true);
    t.pipe({ foreignKey: fk1 });
    t.forwarded();
    t.pipe(null);
    const forwarded = t.forwarded();
    expect(forwarded.length).toBeGreaterThan(0);
    expect(forwarded[0]).toEqual(subscription(fk1, null, "DELETE_KEY_AND_PROPAGATE"));
  });

  it("leftJoinShouldPropagateDeletionOfAPrimaryKeyThatHadNullFK", () => {
    const t = setUp(true);
    t.pipe({ foreignKey: null });
    t.forwarded();
    t.pipe(null);
    expect(t.forwarded()).toEqual([subscription(null, null, "PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE")]);
  });

  it("leftJoinShouldPropagateNothingWhenOldAndNewLeftValueIsNull", () => {
    const t = setUp(true);
    t.pipe(null);
    expect(t.forwarded()).toEqual([]);
  });

  // Inner join tests
  it("innerJoinShouldPropagateNewPrimaryKey", () => {
    const t = setUp(false);
    const leftRecordValue = { foreignKey: fk1 };
    t.pipe(leftRecordValue);
    expect(t.forwarded()).toEqual([subscription(fk1, hash(leftRecordValue), "PROPAGATE_ONLY_IF_FK_VAL_AVAILABLE")]);
  });

  it("innerJoinShouldNotPropagateNewPrimaryKeyWithNullFK", () => {
    const t = setUp(false);
    t.pipe({ foreignKey: null });
    expect(t.forwarded()).toEqual([]);
    // test dropped-records sensors
    expect(droppedRecordsTotal(t.driver)).toBe(1);
  });

  it("innerJoinShouldDeleteOldAndPropagateNewFK", () => {
    const t = setUp(false);
    t.pipe({ foreignKey: fk1 });
    t.forwarded();
    const leftRecordValue = { foreignKey: fk2 };
    t.pipe(leftRecordValue);
    expect(t.forwarded()).toEqual([
      subscription(fk1, hash(leftRecordValue), "DELETE_KEY_NO_PROPAGATE"),
      subscription(fk2, hash(leftRecordValue), "PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE"),
    ]);
  });

  it("innerJoinShouldPropagateNothingWhenOldAndNewFKIsNull", () => {
    const t = setUp(false);
    const leftRecordValue = { foreignKey: null };
    t.pipe(leftRecordValue);
    const droppedBefore = droppedRecordsTotal(t.driver);
    t.pipe(leftRecordValue);
    expect(t.forwarded()).toEqual([]);
    expect(droppedRecordsTotal(t.driver) - droppedBefore).toBe(1);
  });

  it("innerJoinShouldPropagateDeletionOfPrimaryKey", () => {
    const t = setUp(false);
    t.pipe({ foreignKey: fk1 });
    t.forwarded();
    t.pipe(null);
    expect(t.forwarded()).toEqual([subscription(fk1, null, "DELETE_KEY_AND_PROPAGATE")]);
  });

  it("innerJoinShouldPropagateNothingWhenOldAndNewLeftValueIsNull", () => {
    const t = setUp(false);
    t.pipe(null);
    expect(t.forwarded()).toEqual([]);
  });
});
