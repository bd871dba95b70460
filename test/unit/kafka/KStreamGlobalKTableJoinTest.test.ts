/**
 * Ported from Kafka Streams' KStreamGlobalKTableJoinTest: a stream record joins the global table's
 * row of the key computed from it, keeping its own key and timestamp; global table updates produce
 * nothing; a computed key of null matches nothing (but a record without a key of its own joins by
 * its computed key). shouldNotRequireCopartitioning builds with topics of different partition
 * counts (Kafka checks its copartition groups). Kafka's versioned-store setup
 * (`initWithVersionedStore`) is used by none of its tests: a global table cannot be versioned
 * (InternalStreamsBuilderTest.shouldThrowOnVersionedStoreSupplierForGlobalTable).
 */
import { describe, expect, it } from "vitest";
import { kvt } from "./support";
import { globalTableFixture, globalTableTopic, streamTopic } from "./global-table-fixture";

describe("KStreamGlobalKTableJoinTest", () => {
  it("shouldNotRequireCopartitioning", () => {
    const { topology } = globalTableFixture("join", { [streamTopic]: 4, [globalTableTopic]: 3 });
    // KStream-GlobalKTable joins do not need to be co-partitioned
    expect(topology.subtopologies).toHaveLength(1);
    expect(topology.subtopologies[0]!.sourceTopics).toEqual([streamTopic]);
    expect(topology.subtopologies[0]!.globalSourceTopics).toEqual([globalTableTopic]);
  });

  it("shouldNotJoinWithEmptyGlobalTableOnStreamUpdates", () => {
    const f = globalTableFixture("join");
    // push two items to the primary stream. the globalTable is empty
    f.pushToStream(2, "X", true, false);
    f.processor.checkAndClearProcessResult();
  });

  it("shouldNotJoinOnGlobalTableUpdates", () => {
    const f = globalTableFixture("join");
    f.pushToStream(2, "X", true, false);
    f.processor.checkAndClearProcessResult();
    f.pushToGlobalTable(2, "Y");
    f.processor.checkAndClearProcessResult();
    f.pushToStream(4, "X", true, false);
    f.processor.checkAndClearProcessResult(kvt(0, "X0,FKey0+Y0", 2), kvt(1, "X1,FKey1+Y1", 3));
    f.pushToGlobalTable(4, "YY");
    f.processor.checkAndClearProcessResult();
    f.pushToStream(4, "X", true, false);
    f.processor.checkAndClearProcessResult(kvt(0, "X0,FKey0+YY0", 6), kvt(1, "X1,FKey1+YY1", 7), kvt(2, "X2,FKey2+YY2", 8), kvt(3, "X3,FKey3+YY3", 9));
    f.pushToGlobalTable(4, "YYY");
    f.processor.checkAndClearProcessResult();
  });

  it("shouldJoinOnlyIfMatchFoundOnStreamUpdates", () => {
    const f = globalTableFixture("join");
    f.pushToGlobalTable(2, "Y");
    f.processor.checkAndClearProcessResult();
    f.pushToStream(4, "X", true, false);
    f.processor.checkAndClearProcessResult(kvt(0, "X0,FKey0+Y0", 0), kvt(1, "X1,FKey1+Y1", 1));
  });

  it("shouldClearGlobalTableEntryOnNullValueUpdates", () => {
    const f = globalTableFixture("join");
    f.pushToGlobalTable(4, "Y");
    f.processor.checkAndClearProcessResult();
    f.pushToStream(4, "X", true, false);
    f.processor.checkAndClearProcessResult(kvt(0, "X0,FKey0+Y0", 0), kvt(1, "X1,FKey1+Y1", 1), kvt(2, "X2,FKey2+Y2", 2), kvt(3, "X3,FKey3+Y3", 3));
    f.pushNullValueToGlobalTable(2);
    f.processor.checkAndClearProcessResult();
    f.pushToStream(4, "XX", true, false);
    f.processor.checkAndClearProcessResult(kvt(2, "XX2,FKey2+Y2", 6), kvt(3, "XX3,FKey3+Y3", 7));
  });

  it("shouldNotJoinOnNullKeyMapperValues", () => {
    const f = globalTableFixture("join");
    f.pushToGlobalTable(4, "Y");
    f.processor.checkAndClearProcessResult();
    f.pushToStream(4, "XXX", false, false);
    f.processor.checkAndClearProcessResult();
  });

  it("shouldJoinOnNullKeyWithNonNullKeyMapperValues", () => {
    const f = globalTableFixture("join");
    f.pushToGlobalTable(2, "Y");
    f.processor.checkAndClearProcessResult();
    f.pushToStream(4, "X", true, true);
    f.processor.checkAndClearProcessResult(kvt(null, "X0,FKey0+Y0", 0), kvt(1, "X1,FKey1+Y1", 1));
  });
});
