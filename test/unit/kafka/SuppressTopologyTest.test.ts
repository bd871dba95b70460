/**
 * Ported from Kafka Streams' SuppressTopologyTest: the versioned-table cases — `suppress` refuses a
 * versioned table, materialized or computed from one (Kafka refuses the second when the topology is
 * built, Edge Streams when `suppress` is called: the test expects the error from either). Not
 * ported: the node naming tests (Kafka's topology description).
 */
import { describe, expect, it } from "vitest";
import { BufferConfig, Materialized, StreamsBuilder, Stores, Suppressed, TopologyError } from "../../../src/streams";
import { build } from "./support";

describe("SuppressTopologyTest", () => {
  it("shouldThrowOnSuppressForMaterializedVersionedTable", () => {
    const builder = new StreamsBuilder();
    const versionedTable = builder.table("input", {}, Materialized.as(Stores.persistentVersionedKeyValueStore("store", 0)));
    expect(() => versionedTable.suppress(Suppressed.untilTimeLimit(0, BufferConfig.unbounded()))).toThrow(TopologyError);
  });

  it("shouldThrowOnSuppressForNonMaterializedVersionedTable", () => {
    const builder = new StreamsBuilder();
    expect(() => {
      builder
        .table("input", {}, Materialized.as(Stores.persistentVersionedKeyValueStore("store", 0)))
        .filter(() => true)
        .suppress(Suppressed.untilTimeLimit(0, BufferConfig.unbounded()));
      build(builder, "input");
    }).toThrow(TopologyError);
  });
});
