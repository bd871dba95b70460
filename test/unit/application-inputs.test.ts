/**
 * A task's input partitions (`Application.inputPartitions`): its partition of its source topics
 * and every partition of the topics of the global tables it joins. A task asks several times a
 * step, so they are found once per task and handed out as they are: frozen, so that no caller can
 * change what the next one gets.
 */
import { describe, expect, it } from "vitest";
import { Application } from "../../src/application";
import { Serdes, StreamsBuilder } from "../../src/streams";

function application(): Application {
  const str = { key: Serdes.string(), value: Serdes.string() };
  const builder = new StreamsBuilder();
  const products = builder.globalTable("products", str);
  builder
    .stream("orders", str)
    .join(
      products,
      (_k, v) => v,
      (v, name) => `${v}:${name}`,
    )
    .to("out", str);
  return new Application(builder.build({ applicationId: "inputs", topics: { orders: 2, products: 3, out: 1 } }));
}

describe("a task's input partitions", () => {
  it("are its partition of its sources and every partition of its global tables' topics", () => {
    expect(application().inputPartitions("0_1")).toEqual([
      { topic: "orders", partition: 1 },
      { topic: "products", partition: 0 },
      { topic: "products", partition: 1 },
      { topic: "products", partition: 2 },
    ]);
  });

  it("are found once per task, and cannot be changed by a caller", () => {
    const app = application();
    const first = app.inputPartitions("0_0");
    expect(app.inputPartitions("0_0")).toBe(first);
    expect(app.inputPartitions("0_1")).not.toBe(first);
    expect(Object.isFrozen(first)).toBe(true);
    expect(first.every((tp) => Object.isFrozen(tp))).toBe(true);
  });

  it("are refused for a task the application does not have", () => {
    expect(() => application().inputPartitions("0_2")).toThrow();
  });
});
