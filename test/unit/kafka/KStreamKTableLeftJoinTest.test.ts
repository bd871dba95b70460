/**
 * Ported from Kafka Streams' KStreamKTableLeftJoinTest: every stream record joins the table's
 * current row or null, keeping its own timestamp; table updates produce nothing.
 */
import { describe, expect, it } from "vitest";
import { kvt } from "./support";
import { streamTableFixture, streamTopic, tableTopic } from "./stream-table-fixture";

describe("KStreamKTableLeftJoinTest", () => {
  it("shouldRequireCopartitionedStreams", () => {
    const { topology } = streamTableFixture("leftJoin");
    expect(topology.subtopologies).toHaveLength(1);
    expect([...topology.subtopologies[0]!.sourceTopics].sort()).toEqual([streamTopic, tableTopic]);
  });

  it("shouldJoinWithEmptyTableOnStreamUpdates", () => {
    const f = streamTableFixture("leftJoin");
    f.pushToStream(2, "X");
    f.processor.checkAndClearProcessResult(kvt(0, "X0+null", 0), kvt(1, "X1+null", 1));
  });

  it("shouldNotJoinOnTableUpdates", () => {
    const f = streamTableFixture("leftJoin");
    f.pushToStream(2, "X");
    f.processor.checkAndClearProcessResult(kvt(0, "X0+null", 0), kvt(1, "X1+null", 1));
    f.pushToTable(2, "Y");
    f.processor.checkAndClearProcessResult();
    f.pushToStream(4, "X");
    f.processor.checkAndClearProcessResult(kvt(0, "X0+Y0", 0), kvt(1, "X1+Y1", 1), kvt(2, "X2+null", 2), kvt(3, "X3+null", 3));
    f.pushToTable(4, "YY");
    f.processor.checkAndClearProcessResult();
    f.pushToStream(4, "X");
    f.processor.checkAndClearProcessResult(kvt(0, "X0+YY0", 0), kvt(1, "X1+YY1", 1), kvt(2, "X2+YY2", 2), kvt(3, "X3+YY3", 3));
    f.pushToTable(4, "YYY");
    f.processor.checkAndClearProcessResult();
  });

  it("shouldJoinRegardlessIfMatchFoundOnStreamUpdates", () => {
    const f = streamTableFixture("leftJoin");
    f.pushToTable(2, "Y");
    f.processor.checkAndClearProcessResult();
    f.pushToStream(4, "X");
    f.processor.checkAndClearProcessResult(kvt(0, "X0+Y0", 0), kvt(1, "X1+Y1", 1), kvt(2, "X2+null", 2), kvt(3, "X3+null", 3));
  });

  it("shouldClearTableEntryOnNullValueUpdates", () => {
    const f = streamTableFixture("leftJoin");
    f.pushToTable(4, "Y");
    f.processor.checkAndClearProcessResult();
    f.pushToStream(4, "X");
    f.processor.checkAndClearProcessResult(kvt(0, "X0+Y0", 0), kvt(1, "X1+Y1", 1), kvt(2, "X2+Y2", 2), kvt(3, "X3+Y3", 3));
    f.pushNullValueToTable(2);
    f.processor.checkAndClearProcessResult();
    f.pushToStream(4, "XX");
    f.processor.checkAndClearProcessResult(kvt(0, "XX0+null", 0), kvt(1, "XX1+null", 1), kvt(2, "XX2+Y2", 2), kvt(3, "XX3+Y3", 3));
  });

  it("joins a record with a null key with null (KIP-962; not in Kafka's class, see RelaxedNullKeyRequirementJoinTest)", () => {
    const f = streamTableFixture("leftJoin");
    f.pushToTable(2, "Y");
    f.inputStreamTopic.pipeInput(null, "X", 7);
    f.processor.checkAndClearProcessResult(kvt(null, "X+null", 7));
  });
});
