/**
 * Ported from Kafka Streams' KTableKTableForeignKeyJoinIntegrationTest (a TopologyTestDriver test):
 * foreign-key joins, inner and left, with the result materialized or not, and rejoined with the
 * left table (a table-table join over the result), through adding, re-keying and deleting rows on
 * both sides. Each case runs once per combination (Edge Streams has no topology optimization to
 * toggle, and no record caches). Kafka's subscription-store key (`rhs1` then `lhs1`, length-
 * prefixed) is here the encoded foreign key then the primary key. As Kafka's, the cases run with
 * either table versioned too (Kafka's `versionedData`: no rejoin), and shouldIgnoreOutOfOrderRecordsIffVersioned
 * checks that out-of-order updates of a versioned side join nothing.
 */
import { describe, expect, it } from "vitest";
import { Materialized, StreamsBuilder, Stores, TopologyTestDriver, type KTable, type Topology } from "../../../src/streams";
import { encodeKey } from "../../../src/streams/state/key-codec";
import { STRING, TestInputTopic, TestOutputTopic } from "./support";

const LEFT_TABLE = "left_table";
const RIGHT_TABLE = "right_table";
const OUTPUT = "output-topic";
const REJOIN_OUTPUT = "rejoin-output-topic";
const baseTimestamp = 1_700_000_000_000;

interface Versioned {
  readonly leftVersioned: boolean;
  readonly rightVersioned: boolean;
}
const UNVERSIONED: Versioned = { leftVersioned: false, rightVersioned: false };

function getTopology(
  queryableStoreName: string | null,
  leftJoin: boolean,
  rejoin: boolean,
  extractor: (value: string) => string | null = (value) => value.split("|")[1]!,
  { leftVersioned, rightVersioned }: Versioned = UNVERSIONED,
): Topology {
  const builder = new StreamsBuilder();
  const versioned = (name: string) => Materialized.as<string, string>(Stores.persistentVersionedKeyValueStore(name, 5 * 60_000));
  const left = builder.table(LEFT_TABLE, { key: STRING, value: STRING }, leftVersioned ? versioned("left") : undefined);
  const right = builder.table(RIGHT_TABLE, { key: STRING, value: STRING }, rightVersioned ? versioned("right") : undefined);
  const joiner = (value1: string, value2: string | null) => `(${value1},${value2})`;
  const rejoiner = (value1: string, value2: string | null) => `rejoin(${value1},${value2})`;
  const mainMaterialized =
    queryableStoreName === null ? Materialized.with<string, string>(undefined, STRING) : Materialized.as<string, string>(queryableStoreName, { value: STRING });
  const rejoinMaterialized =
    queryableStoreName === null
      ? Materialized.with<string, string>(undefined, STRING)
      : Materialized.as<string, string>(`${queryableStoreName}-rejoin`, { value: STRING });
  const fkJoin: KTable<string, string, null> = leftJoin
    ? left.leftJoin(right, extractor, joiner, mainMaterialized)
    : left.join(right, extractor, joiner, mainMaterialized);
  fkJoin.toStream().to(OUTPUT, { key: STRING, value: STRING });
  // also make sure the FK join is set up right for downstream operations that require materialization
  if (rejoin)
    (leftJoin ? fkJoin.leftJoin(left, rejoiner, rejoinMaterialized) : fkJoin.join(left, rejoiner, rejoinMaterialized))
      .toStream()
      .to(REJOIN_OUTPUT, { key: STRING, value: STRING });
  return builder.build({ applicationId: "fk", topics: { [LEFT_TABLE]: 1, [RIGHT_TABLE]: 1, [OUTPUT]: 1, [REJOIN_OUTPUT]: 1 } });
}

function setUp(materialized: boolean, leftJoin: boolean, rejoin: boolean, extractor?: (value: string) => string | null, versioned: Versioned = UNVERSIONED) {
  const topology = getTopology(materialized ? "store" : null, leftJoin, rejoin, extractor, versioned);
  const driver = new TopologyTestDriver(topology);
  return {
    driver,
    /** Kafka's `driver.getKeyValueStore(<the store named ...SUBSCRIPTION-STATE-STORE...>)`, raw. */
    subscriptionStore: () => {
      const owner = topology.subtopologies.find((s) => s.stores.some((store) => store.name.includes("SUBSCRIPTION-STATE-STORE")))!;
      const store = owner.stores.find((st) => st.name.includes("SUBSCRIPTION-STATE-STORE"))!;
      return driver.backends.get(`${owner.id}_0`)!.keyValue(store.name);
    },
    right: new TestInputTopic(driver, RIGHT_TABLE, STRING, STRING),
    left: new TestInputTopic(driver, LEFT_TABLE, STRING, STRING),
    outputTopic: new TestOutputTopic(driver, OUTPUT, STRING, STRING),
    rejoinOutputTopic: new TestOutputTopic(driver, REJOIN_OUTPUT, STRING, STRING),
    store: () =>
      new Map(
        driver
          .store<string, string>(driver.tasks.keys().next().value!, "store")
          .all()
          .map((e) => [e.key, e.value]),
      ),
  };
}

const map = (...entries: [string, string | null][]) => new Map(entries);
const flags = [true, false];
/** Kafka's `data()`: unversioned tables, with and without rejoin. */
const data = flags.flatMap((leftJoin) => flags.flatMap((materialized) => flags.map((rejoin) => ({ leftJoin, materialized, rejoin, ...UNVERSIONED }))));
/** Kafka's `versionedData()`: either table versioned or not, without rejoin. */
const versionedData = flags.flatMap((leftJoin) =>
  flags.flatMap((materialized) =>
    flags.flatMap((leftVersioned) => flags.map((rightVersioned) => ({ leftJoin, materialized, rejoin: false, leftVersioned, rightVersioned }))),
  ),
);
/** Kafka's `testCases()`: both, without duplicates. */
const cases = [...data, ...versionedData.filter((c) => c.leftVersioned || c.rightVersioned)];
type Case = (typeof cases)[number];
const name = (c: Case) =>
  `leftJoin=${c.leftJoin} materialized=${c.materialized} rejoin=${c.rejoin} leftVersioned=${c.leftVersioned} rightVersioned=${c.rightVersioned}`;

describe("KTableKTableForeignKeyJoinIntegrationTest", () => {
  it.each(cases.map((c) => [name(c), c] as const))("doJoinFromLeftThenDeleteLeftEntity %s", (_name, { leftJoin, materialized, rejoin, ...versioned }) => {
    const t = setUp(materialized, leftJoin, rejoin, undefined, versioned);
    // Pre-populate the RHS records. This test is all about what happens when we add/remove LHS records
    t.right.pipeInput("rhs1", "rhsValue1", baseTimestamp);
    t.right.pipeInput("rhs2", "rhsValue2", baseTimestamp + 1);
    t.right.pipeInput("rhs3", "rhsValue3", baseTimestamp + 2); // this unreferenced FK won't show up in any results
    expect(t.outputTopic.readKeyValuesToMap()).toEqual(map());
    if (rejoin) expect(t.rejoinOutputTopic.readKeyValuesToMap()).toEqual(map());
    if (materialized) expect(t.store()).toEqual(map());

    t.left.pipeInput("lhs1", "lhsValue1|rhs1", baseTimestamp + 3);
    t.left.pipeInput("lhs2", "lhsValue2|rhs2", baseTimestamp + 4);
    const expected = map(["lhs1", "(lhsValue1|rhs1,rhsValue1)"], ["lhs2", "(lhsValue2|rhs2,rhsValue2)"]);
    expect(t.outputTopic.readKeyValuesToMap()).toEqual(expected);
    if (rejoin) {
      expect(t.rejoinOutputTopic.readKeyValuesToMap()).toEqual(
        map(["lhs1", "rejoin((lhsValue1|rhs1,rhsValue1),lhsValue1|rhs1)"], ["lhs2", "rejoin((lhsValue2|rhs2,rhsValue2),lhsValue2|rhs2)"]),
      );
    }
    if (materialized) expect(t.store()).toEqual(expected);

    // Add another reference to an existing FK
    t.left.pipeInput("lhs3", "lhsValue3|rhs1", baseTimestamp + 5);
    expect(t.outputTopic.readKeyValuesToMap()).toEqual(map(["lhs3", "(lhsValue3|rhs1,rhsValue1)"]));
    if (rejoin) expect(t.rejoinOutputTopic.readKeyValuesToMap()).toEqual(map(["lhs3", "rejoin((lhsValue3|rhs1,rhsValue1),lhsValue3|rhs1)"]));
    if (materialized)
      expect(t.store()).toEqual(map(["lhs1", "(lhsValue1|rhs1,rhsValue1)"], ["lhs2", "(lhsValue2|rhs2,rhsValue2)"], ["lhs3", "(lhsValue3|rhs1,rhsValue1)"]));

    // Now delete one LHS entity such that one delete is propagated down to the output.
    t.left.pipeInput("lhs1", null, baseTimestamp + 6);
    expect(t.outputTopic.readKeyValuesToMap()).toEqual(map(["lhs1", null]));
    if (rejoin) expect(t.rejoinOutputTopic.readKeyValuesToMap()).toEqual(map(["lhs1", null]));
    if (materialized) expect(t.store()).toEqual(map(["lhs2", "(lhsValue2|rhs2,rhsValue2)"], ["lhs3", "(lhsValue3|rhs1,rhsValue1)"]));
  });

  it.each(cases.map((c) => [name(c), c] as const))("doJoinFromRightThenDeleteRightEntity %s", (_name, { leftJoin, materialized, rejoin, ...versioned }) => {
    const t = setUp(materialized, leftJoin, rejoin, undefined, versioned);
    // Pre-populate the LHS records. This test is all about what happens when we add/remove RHS records
    t.left.pipeInput("lhs1", "lhsValue1|rhs1", baseTimestamp);
    t.left.pipeInput("lhs2", "lhsValue2|rhs2", baseTimestamp + 1);
    t.left.pipeInput("lhs3", "lhsValue3|rhs1", baseTimestamp + 2);
    const halfJoined = map(["lhs1", "(lhsValue1|rhs1,null)"], ["lhs2", "(lhsValue2|rhs2,null)"], ["lhs3", "(lhsValue3|rhs1,null)"]);
    expect(t.outputTopic.readKeyValuesToMap()).toEqual(leftJoin ? halfJoined : map());
    if (materialized) expect(t.store()).toEqual(leftJoin ? halfJoined : map());

    t.right.pipeInput("rhs1", "rhsValue1", baseTimestamp + 3);
    expect(t.outputTopic.readKeyValuesToMap()).toEqual(map(["lhs1", "(lhsValue1|rhs1,rhsValue1)"], ["lhs3", "(lhsValue3|rhs1,rhsValue1)"]));
    if (materialized) {
      expect(t.store()).toEqual(
        leftJoin
          ? map(["lhs1", "(lhsValue1|rhs1,rhsValue1)"], ["lhs2", "(lhsValue2|rhs2,null)"], ["lhs3", "(lhsValue3|rhs1,rhsValue1)"])
          : map(["lhs1", "(lhsValue1|rhs1,rhsValue1)"], ["lhs3", "(lhsValue3|rhs1,rhsValue1)"]),
      );
    }

    t.right.pipeInput("rhs2", "rhsValue2", baseTimestamp + 4);
    expect(t.outputTopic.readKeyValuesToMap()).toEqual(map(["lhs2", "(lhsValue2|rhs2,rhsValue2)"]));
    const allJoined = map(["lhs1", "(lhsValue1|rhs1,rhsValue1)"], ["lhs2", "(lhsValue2|rhs2,rhsValue2)"], ["lhs3", "(lhsValue3|rhs1,rhsValue1)"]);
    if (materialized) expect(t.store()).toEqual(allJoined);

    t.right.pipeInput("rhs3", "rhsValue3", baseTimestamp + 5); // this unreferenced FK won't show up in any results
    expect(t.outputTopic.readKeyValuesToMap()).toEqual(map());
    if (materialized) expect(t.store()).toEqual(allJoined);

    // Now delete the RHS entity such that all matching keys have deletes propagated.
    t.right.pipeInput("rhs1", null, baseTimestamp + 6);
    expect(t.outputTopic.readKeyValuesToMap()).toEqual(
      map(["lhs1", leftJoin ? "(lhsValue1|rhs1,null)" : null], ["lhs3", leftJoin ? "(lhsValue3|rhs1,null)" : null]),
    );
    if (materialized) {
      expect(t.store()).toEqual(
        leftJoin
          ? map(["lhs1", "(lhsValue1|rhs1,null)"], ["lhs2", "(lhsValue2|rhs2,rhsValue2)"], ["lhs3", "(lhsValue3|rhs1,null)"])
          : map(["lhs2", "(lhsValue2|rhs2,rhsValue2)"]),
      );
    }
  });

  it.each(cases.map((c) => [name(c), c] as const))(
    "shouldEmitTombstoneWhenDeletingNonJoiningRecords %s",
    (_name, { leftJoin, materialized, rejoin, ...versioned }) => {
      const t = setUp(materialized, leftJoin, rejoin, undefined, versioned);
      t.left.pipeInput("lhs1", "lhsValue1|rhs1", baseTimestamp);
      const expected = leftJoin ? map(["lhs1", "(lhsValue1|rhs1,null)"]) : map();
      expect(t.outputTopic.readKeyValuesToMap()).toEqual(expected);
      if (materialized) expect(t.store()).toEqual(expected);
      // Deleting a non-joining record produces an unnecessary tombstone for inner joins, because
      // it's not possible to know whether a result was previously emitted.
      // For the left join, the tombstone is necessary.
      t.left.pipeInput("lhs1", null, baseTimestamp + 1);
      expect(t.outputTopic.readKeyValuesToMap()).toEqual(map(["lhs1", null]));
      if (materialized) expect(t.store()).toEqual(map());
      // Deleting a non-existing record is idempotent
      t.left.pipeInput("lhs1", null, baseTimestamp + 2);
      expect(t.outputTopic.readKeyValuesToMap()).toEqual(map());
      if (materialized) expect(t.store()).toEqual(map());
    },
  );

  it.each(cases.map((c) => [name(c), c] as const))(
    "shouldNotEmitTombstonesWhenDeletingNonExistingRecords %s",
    (_name, { leftJoin, materialized, rejoin, ...versioned }) => {
      const t = setUp(materialized, leftJoin, rejoin, undefined, versioned);
      // Deleting a record that never existed doesn't need to emit tombstones.
      t.left.pipeInput("lhs1", null, baseTimestamp);
      expect(t.outputTopic.readKeyValuesToMap()).toEqual(map());
      if (materialized) expect(t.store()).toEqual(map());
    },
  );

  it.each(cases.map((c) => [name(c), c] as const))(
    "joinShouldProduceNullsWhenValueHasNonMatchingForeignKey %s",
    (_name, { leftJoin, materialized, rejoin, ...versioned }) => {
      const t = setUp(materialized, leftJoin, rejoin, undefined, versioned);
      t.left.pipeInput("lhs1", "lhsValue1|rhs1", baseTimestamp);
      // no output for a new inner join on a non-existent FK
      // the left join of course emits the half-joined output
      expect(t.outputTopic.readKeyValuesToMap()).toEqual(leftJoin ? map(["lhs1", "(lhsValue1|rhs1,null)"]) : map());
      if (materialized) expect(t.store()).toEqual(leftJoin ? map(["lhs1", "(lhsValue1|rhs1,null)"]) : map());
      // "moving" our subscription to another non-existent FK results in an unnecessary tombstone for inner join,
      // since it impossible to know whether the prior FK existed or not (and thus whether any results have
      // previously been emitted)
      // The left join emits a _necessary_ update (since the lhs record has actually changed)
      t.left.pipeInput("lhs1", "lhsValue1|rhs2", baseTimestamp + 1);
      expect(t.outputTopic.readKeyValuesToMap()).toEqual(map(["lhs1", leftJoin ? "(lhsValue1|rhs2,null)" : null]));
      if (materialized) expect(t.store()).toEqual(leftJoin ? map(["lhs1", "(lhsValue1|rhs2,null)"]) : map());
      // of course, moving it again to yet another non-existent FK has the same effect
      t.left.pipeInput("lhs1", "lhsValue1|rhs3", baseTimestamp + 2);
      expect(t.outputTopic.readKeyValuesToMap()).toEqual(map(["lhs1", leftJoin ? "(lhsValue1|rhs3,null)" : null]));
      if (materialized) expect(t.store()).toEqual(leftJoin ? map(["lhs1", "(lhsValue1|rhs3,null)"]) : map());
      // Adding an RHS record now, so that we can demonstrate "moving" from a non-existent FK to an existent one
      // This RHS key was previously referenced, but it's not referenced now, so adding this record should
      // result in no changes whatsoever.
      t.right.pipeInput("rhs1", "rhsValue1", baseTimestamp + 3);
      expect(t.outputTopic.readKeyValuesToMap()).toEqual(map());
      if (materialized) expect(t.store()).toEqual(leftJoin ? map(["lhs1", "(lhsValue1|rhs3,null)"]) : map());
      // now, we change to a FK that exists, and see the join completes
      t.left.pipeInput("lhs1", "lhsValue1|rhs1", baseTimestamp + 4);
      expect(t.outputTopic.readKeyValuesToMap()).toEqual(map(["lhs1", "(lhsValue1|rhs1,rhsValue1)"]));
      if (materialized) expect(t.store()).toEqual(map(["lhs1", "(lhsValue1|rhs1,rhsValue1)"]));
      // but if we update it again to a non-existent one, we'll get a tombstone for the inner join, and the
      // left join updates appropriately.
      t.left.pipeInput("lhs1", "lhsValue1|rhs2", baseTimestamp + 5);
      expect(t.outputTopic.readKeyValuesToMap()).toEqual(map(["lhs1", leftJoin ? "(lhsValue1|rhs2,null)" : null]));
      if (materialized) expect(t.store()).toEqual(leftJoin ? map(["lhs1", "(lhsValue1|rhs2,null)"]) : map());
    },
  );

  it.each(cases.map((c) => [name(c), c] as const))(
    "shouldUnsubscribeOldForeignKeyIfLeftSideIsUpdated %s",
    (_name, { leftJoin, materialized, rejoin, ...versioned }) => {
      const t = setUp(materialized, leftJoin, rejoin, undefined, versioned);
      // Pre-populate the RHS records. This test is all about what happens when we change LHS records foreign key reference
      // then populate update on RHS
      t.right.pipeInput("rhs1", "rhsValue1", baseTimestamp);
      t.right.pipeInput("rhs2", "rhsValue2", baseTimestamp + 1);
      expect(t.outputTopic.readKeyValuesToMap()).toEqual(map());
      if (materialized) expect(t.store()).toEqual(map());
      t.left.pipeInput("lhs1", "lhsValue1|rhs1", baseTimestamp + 2);
      expect(t.outputTopic.readKeyValuesToMap()).toEqual(map(["lhs1", "(lhsValue1|rhs1,rhsValue1)"]));
      if (materialized) expect(t.store()).toEqual(map(["lhs1", "(lhsValue1|rhs1,rhsValue1)"]));
      // Change LHS foreign key reference
      t.left.pipeInput("lhs1", "lhsValue1|rhs2", baseTimestamp + 3);
      expect(t.outputTopic.readKeyValuesToMap()).toEqual(map(["lhs1", "(lhsValue1|rhs2,rhsValue2)"]));
      if (materialized) expect(t.store()).toEqual(map(["lhs1", "(lhsValue1|rhs2,rhsValue2)"]));
      // Populate RHS update on old LHS foreign key ref
      t.right.pipeInput("rhs1", "rhsValue1Delta", baseTimestamp + 4);
      expect(t.outputTopic.readKeyValuesToMap()).toEqual(map());
      if (materialized) expect(t.store()).toEqual(map(["lhs1", "(lhsValue1|rhs2,rhsValue2)"]));
    },
  );

  /** Kafka's `testCasesWithoutLeftJoinArg()`: the cases without their leftJoin flag, deduplicated. */
  const leftJoinCases = cases
    .filter((c) => c.leftJoin)
    .map((c) => [`materialized=${c.materialized} rejoin=${c.rejoin} leftVersioned=${c.leftVersioned} rightVersioned=${c.rightVersioned}`, c] as const);

  it.each(leftJoinCases)("shouldEmitRecordOnNullForeignKeyForLeftJoins %s", (_name, { materialized, rejoin, ...versioned }) => {
    const t = setUp(materialized, true, rejoin, () => null, versioned);
    t.left.pipeInput("lhs1", "lhsValue1|rhs1", baseTimestamp);
    const expected = map(["lhs1", "(lhsValue1|rhs1,null)"]);
    expect(t.outputTopic.readKeyValuesToMap()).toEqual(expected);
    if (materialized) expect(t.store()).toEqual(expected);
  });

  it.each(leftJoinCases)("shouldEmitRecordWhenOldAndNewFkDiffer %s", (_name, { materialized, rejoin, ...versioned }) => {
    const foreignKeyExtractor = (value: string) => {
      const split = value.split("|")[1]!;
      //new fk : old fk
      return split === "returnNull" ? null : split;
    };
    const t = setUp(materialized, true, rejoin, foreignKeyExtractor, versioned);
    const key = encodeKey("rhs1") + "lhs1";
    t.left.pipeInput("lhs1", "lhsValue1|rhs1", baseTimestamp);
    expect(t.outputTopic.readKeyValuesToMap()).toEqual(map(["lhs1", "(lhsValue1|rhs1,null)"]));
    if (materialized) expect(t.store()).toEqual(map(["lhs1", "(lhsValue1|rhs1,null)"]));
    expect(t.subscriptionStore().get(key)).toBeDefined();
    t.left.pipeInput("lhs1", "lhsValue1|returnNull", baseTimestamp);
    expect(t.outputTopic.readKeyValuesToMap()).toEqual(map(["lhs1", "(lhsValue1|returnNull,null)"]));
    if (materialized) expect(t.store()).toEqual(map(["lhs1", "(lhsValue1|returnNull,null)"]));
    expect(t.subscriptionStore().get(key)).toBeUndefined();
  });

  it.each(versionedData.map((c) => [name(c), c] as const))(
    "shouldIgnoreOutOfOrderRecordsIffVersioned %s",
    (_name, { leftJoin, materialized, rejoin, leftVersioned, rightVersioned }) => {
      const t = setUp(materialized, leftJoin, rejoin, undefined, { leftVersioned, rightVersioned });
      const check = (output: Map<string, string | null>, store?: Map<string, string | null>) => {
        expect(t.outputTopic.readKeyValuesToMap()).toEqual(output);
        if (materialized) expect(t.store()).toEqual(store ?? output);
      };

      // RHS record
      t.right.pipeInput("rhs1", "rhsValue1", baseTimestamp + 4);
      check(map());

      // LHS records with match to existing RHS record
      t.left.pipeInput("lhs1", "lhsValue1|rhs1", baseTimestamp + 3);
      t.left.pipeInput("lhs2", "lhsValue2|rhs1", baseTimestamp + 5);
      check(map(["lhs1", "(lhsValue1|rhs1,rhsValue1)"], ["lhs2", "(lhsValue2|rhs1,rhsValue1)"]));

      // replace with tombstone, to validate behavior when latest record is null
      t.left.pipeInput("lhs2", null, baseTimestamp + 6);
      check(map(["lhs2", null]), map(["lhs1", "(lhsValue1|rhs1,rhsValue1)"]));

      // out-of-order LHS record (for existing key) does not produce a new result iff LHS is versioned
      t.left.pipeInput("lhs1", "lhsValue1_ooo|rhs1", baseTimestamp + 2);
      t.left.pipeInput("lhs2", "lhsValue2_ooo|rhs1", baseTimestamp + 2);
      if (leftVersioned) check(map(), map(["lhs1", "(lhsValue1|rhs1,rhsValue1)"]));
      else check(map(["lhs1", "(lhsValue1_ooo|rhs1,rhsValue1)"], ["lhs2", "(lhsValue2_ooo|rhs1,rhsValue1)"]));

      // out-of-order LHS tombstone (for existing key) is similarly ignored (iff LHS is versioned)
      t.left.pipeInput("lhs1", null, baseTimestamp + 2);
      if (leftVersioned) check(map(), map(["lhs1", "(lhsValue1|rhs1,rhsValue1)"]));
      else check(map(["lhs1", null]), map(["lhs2", "(lhsValue2_ooo|rhs1,rhsValue1)"]));

      // LHS record with larger timestamp always produces a new result
      t.left.pipeInput("lhs1", "lhsValue1_new|rhs1", baseTimestamp + 8);
      t.left.pipeInput("lhs2", "lhsValue2_new|rhs1", baseTimestamp + 8);
      check(map(["lhs1", "(lhsValue1_new|rhs1,rhsValue1)"], ["lhs2", "(lhsValue2_new|rhs1,rhsValue1)"]));

      // out-of-order RHS record (for existing key) does not produce a new result iff RHS is versioned
      t.right.pipeInput("rhs1", "rhsValue1_ooo", baseTimestamp + 1);
      if (rightVersioned) check(map(), map(["lhs1", "(lhsValue1_new|rhs1,rhsValue1)"], ["lhs2", "(lhsValue2_new|rhs1,rhsValue1)"]));
      else check(map(["lhs1", "(lhsValue1_new|rhs1,rhsValue1_ooo)"], ["lhs2", "(lhsValue2_new|rhs1,rhsValue1_ooo)"]));

      // out-of-order RHS tombstone (for existing key) is similarly ignored (iff RHS is versioned)
      t.right.pipeInput("rhs1", null, baseTimestamp + 1);
      if (rightVersioned) check(map(), map(["lhs1", "(lhsValue1_new|rhs1,rhsValue1)"], ["lhs2", "(lhsValue2_new|rhs1,rhsValue1)"]));
      else if (leftJoin) check(map(["lhs1", "(lhsValue1_new|rhs1,null)"], ["lhs2", "(lhsValue2_new|rhs1,null)"]));
      else check(map(["lhs1", null], ["lhs2", null]), map());

      // RHS record with larger timestamps always produces new results
      t.right.pipeInput("rhs1", "rhsValue1_new", baseTimestamp + 6);
      check(map(["lhs1", "(lhsValue1_new|rhs1,rhsValue1_new)"], ["lhs2", "(lhsValue2_new|rhs1,rhsValue1_new)"]));
    },
  );
});
