/**
 * Ported from Kafka Streams' KStreamGlobalKTableLeftJoinTest: every stream record joins the
 * global table's row of the key computed from it, or null; a computed key of null matches nothing
 * and is dropped (unless the record has no key of its own, KIP-962). Kafka's versioned-store setup
 * (`initWithVersionedStore`) is used by none of its tests: a global table cannot be versioned.
 */
import { describe, expect, it } from "vitest";
import { kvt } from "./support";
import { globalTableFixture, globalTableTopic, streamTopic } from "./global-table-fixture";

describe("KStreamGlobalKTableLeftJoinTest", () => {
  it("shouldNotRequireCopartitioning", () => {
    const { topology } = globalTableFixture("leftJoin", { [streamTopic]: 2, [globalTableTopic]: 5 });
    expect(topology.subtopologies).toHaveLength(1);
    expect(topology.subtopologies[0]!.partitions).toBe(2);
  });

  it("shouldNotJoinWithEmptyGlobalTableOnStreamUpdates", () => {
    const f = globalTableFixture("leftJoin");
    f.pushToStream(2, "X", true, false);
    f.processor.checkAndClearProcessResult(kvt(0, "X0,FKey0+null", 0), kvt(1, "X1,FKey1+null", 1));
  });

  it("shouldNotJoinOnGlobalTableUpdates", () => {
    const f = globalTableFixture("leftJoin");
    f.pushToStream(2, "X", true, false);
    f.processor.checkAndClearProcessResult(kvt(0, "X0,FKey0+null", 0), kvt(1, "X1,FKey1+null", 1));
    f.pushToGlobalTable(2, "Y");
    f.processor.checkAndClearProcessResult();
    f.pushToStream(4, "X", true, false);
    f.processor.checkAndClearProcessResult(kvt(0, "X0,FKey0+Y0", 2), kvt(1, "X1,FKey1+Y1", 3), kvt(2, "X2,FKey2+null", 4), kvt(3, "X3,FKey3+null", 5));
    f.pushToGlobalTable(4, "YY");
    f.processor.checkAndClearProcessResult();
    f.pushToStream(4, "X", true, false);
    f.processor.checkAndClearProcessResult(kvt(0, "X0,FKey0+YY0", 6), kvt(1, "X1,FKey1+YY1", 7), kvt(2, "X2,FKey2+YY2", 8), kvt(3, "X3,FKey3+YY3", 9));
    f.pushToGlobalTable(4, "YYY");
    f.processor.checkAndClearProcessResult();
  });

  it("shouldJoinRegardlessIfMatchFoundOnStreamUpdates", () => {
    const f = globalTableFixture("leftJoin");
    f.pushToGlobalTable(2, "Y");
    f.processor.checkAndClearProcessResult();
    f.pushToStream(4, "X", true, false);
    f.processor.checkAndClearProcessResult(kvt(0, "X0,FKey0+Y0", 0), kvt(1, "X1,FKey1+Y1", 1), kvt(2, "X2,FKey2+null", 2), kvt(3, "X3,FKey3+null", 3));
  });

  it("shouldClearGlobalTableEntryOnNullValueUpdates", () => {
    const f = globalTableFixture("leftJoin");
    f.pushToGlobalTable(4, "Y");
    f.processor.checkAndClearProcessResult();
    f.pushToStream(4, "X", true, false);
    f.processor.checkAndClearProcessResult(kvt(0, "X0,FKey0+Y0", 0), kvt(1, "X1,FKey1+Y1", 1), kvt(2, "X2,FKey2+Y2", 2), kvt(3, "X3,FKey3+Y3", 3));
    f.pushNullValueToGlobalTable(2);
    f.processor.checkAndClearProcessResult();
    f.pushToStream(4, "XX", true, false);
    f.processor.checkAndClearProcessResult(kvt(0, "XX0,FKey0+null", 4), kvt(1, "XX1,FKey1+null", 5), kvt(2, "XX2,FKey2+Y2", 6), kvt(3, "XX3,FKey3+Y3", 7));
  });

  it("shouldNotJoinOnNullKeyMapperValues", () => {
    const f = globalTableFixture("leftJoin");
    f.pushToGlobalTable(4, "Y");
    f.processor.checkAndClearProcessResult();
    f.pushToStream(4, "XXX", false, false);
    f.processor.checkAndClearProcessResult();
  });

  it("shouldJoinOnNullKeyWithNonNullKeyMapperValues", () => {
    const f = globalTableFixture("leftJoin");
    f.pushToGlobalTable(4, "Y");
    f.processor.checkAndClearProcessResult();
    f.pushToStream(4, "X", true, true);
    f.processor.checkAndClearProcessResult(kvt(null, "X0,FKey0+Y0", 0), kvt(1, "X1,FKey1+Y1", 1), kvt(2, "X2,FKey2+Y2", 2), kvt(3, "X3,FKey3+Y3", 3));
  });
});
