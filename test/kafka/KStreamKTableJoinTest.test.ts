/**
 * Ported from Kafka Streams' KStreamKTableJoinTest: a stream record joins the table's current row
 * and keeps its own timestamp; table updates produce nothing; a record with a null key or value is
 * dropped (and counted). Not ported: the grace-period and versioned-table tests (Edge Streams has
 * no versioned stores) and the repartition topic naming tests (Kafka's topology description).
 */
import { describe, expect, it } from "vitest";
import { droppedRecordsTotal, kvt } from "./support";
import { streamTableFixture, streamTopic, tableTopic } from "./stream-table-fixture";

describe("KStreamKTableJoinTest", () => {
  it("shouldRequireCopartitionedStreams", () => {
    const { topology } = streamTableFixture("join");
    expect(topology.subtopologies).toHaveLength(1);
    expect([...topology.subtopologies[0]!.sourceTopics].sort()).toEqual([streamTopic, tableTopic]);
  });

  it("shouldNotJoinWithEmptyTableOnStreamUpdates", () => {
    const f = streamTableFixture("join");
    f.pushToStream(2, "X");
    f.processor.checkAndClearProcessResult();
  });

  it("shouldNotJoinOnTableUpdates", () => {
    const f = streamTableFixture("join");
    f.pushToStream(2, "X");
    f.processor.checkAndClearProcessResult();
    f.pushToTable(2, "Y");
    f.processor.checkAndClearProcessResult();
    f.pushToStream(4, "X");
    f.processor.checkAndClearProcessResult(kvt(0, "X0+Y0", 0), kvt(1, "X1+Y1", 1));
    f.pushToTable(4, "YY");
    f.processor.checkAndClearProcessResult();
    f.pushToStream(4, "X");
    f.processor.checkAndClearProcessResult(kvt(0, "X0+YY0", 0), kvt(1, "X1+YY1", 1), kvt(2, "X2+YY2", 2), kvt(3, "X3+YY3", 3));
    f.pushToTable(4, "YYY");
    f.processor.checkAndClearProcessResult();
  });

  it("shouldJoinOnlyIfMatchFoundOnStreamUpdates", () => {
    const f = streamTableFixture("join");
    f.pushToTable(2, "Y");
    f.processor.checkAndClearProcessResult();
    f.pushToStream(4, "X");
    f.processor.checkAndClearProcessResult(kvt(0, "X0+Y0", 0), kvt(1, "X1+Y1", 1));
  });

  it("shouldClearTableEntryOnNullValueUpdates", () => {
    const f = streamTableFixture("join");
    f.pushToTable(4, "Y");
    f.processor.checkAndClearProcessResult();
    f.pushToStream(4, "X");
    f.processor.checkAndClearProcessResult(kvt(0, "X0+Y0", 0), kvt(1, "X1+Y1", 1), kvt(2, "X2+Y2", 2), kvt(3, "X3+Y3", 3));
    f.pushNullValueToTable();
    f.processor.checkAndClearProcessResult();
    f.pushToStream(4, "XX");
    f.processor.checkAndClearProcessResult(kvt(2, "XX2+Y2", 2), kvt(3, "XX3+Y3", 3));
  });

  it("shouldLogAndMeterWhenSkippingNullLeftKey", () => {
    const f = streamTableFixture("join");
    f.inputStreamTopic.pipeInput(null, "A");
    f.processor.checkAndClearProcessResult();
    expect(droppedRecordsTotal(f.driver)).toBe(1);
  });

  it("shouldLogAndMeterWhenSkippingNullLeftValue", () => {
    const f = streamTableFixture("join");
    f.inputStreamTopic.pipeInput(1, null);
    f.processor.checkAndClearProcessResult();
    expect(droppedRecordsTotal(f.driver)).toBe(1);
  });
});
