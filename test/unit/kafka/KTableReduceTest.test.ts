/**
 * Ported from Kafka Streams' KTableReduceTest: the reduce of a regrouped table subtracts an
 * update's old value and adds its new one, and keeps the later timestamp. Kafka feeds the changes
 * to the processor by hand; here a table whose row `A` becomes {a}, then {b}, then is deleted
 * produces exactly those changes (`Change({a}, null)`, `Change({b}, {a})`, `Change(null, {b})`)
 * through `groupBy`. Sets are arrays (JSON).
 */
import { describe, expect, it } from "vitest";
import { Materialized, StreamsBuilder, TopologyTestDriver } from "../../../src/streams";
import { build, STRING, TestInputTopic } from "./support";

const unionNotNullArgs = (left: string[], right: string[]) => [...new Set([...left, ...right])].sort();
const differenceNotNullArgs = (left: string[], right: string[]) => left.filter((v) => !right.includes(v));

describe("KTableReduceTest", () => {
  it("shouldAddAndSubtract", () => {
    const builder = new StreamsBuilder();
    builder
      .table<string, string[]>("topic", { key: STRING })
      // The regrouping names its key serde: Edge Streams does not assume JSON after a key change (docs/dsl.md).
      .groupBy((key, value) => ({ key, value }), { key: STRING })
      .reduce(unionNotNullArgs, differenceNotNullArgs, Materialized.as("myStore"));
    const driver = new TopologyTestDriver(build(builder, "topic"));
    const input = new TestInputTopic<string, string[]>(driver, "topic", STRING, { serialize: JSON.stringify, deserialize: JSON.parse });
    input.pipeInput("A", ["a"], 10);
    expect(driver.getWithTimestamp("myStore", "A")).toEqual({ value: ["a"], timestamp: 10 });
    input.pipeInput("A", ["b"], 15);
    expect(driver.getWithTimestamp("myStore", "A")).toEqual({ value: ["b"], timestamp: 15 });
    input.pipeInput("A", null, 12);
    expect(driver.getWithTimestamp("myStore", "A")).toEqual({ value: [], timestamp: 15 });
  });
});
