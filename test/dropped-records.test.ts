/**
 * Dropped records are visible (Kafka's dropped-records metric): a record the topology discards —
 * here an order without a key, which the aggregation cannot group — is counted by reason in
 * `GET /metrics` and in total in each instance's entry of `GET /tasks`, on the real runtime.
 */
import { env } from "cloudflare:workers";
import { expect, it } from "vitest";
import { TestDriver } from "../platform/testing/test-driver";
import { application } from "./support/orders-app";
import { call, json } from "./support/api";
import { activeInstance } from "./support/active";

const driver = new TestDriver(env, application);

it("counts a dropped record in /metrics (by reason) and in GET /tasks", async () => {
  await driver.pipe("orders", [
    { key: null, value: { amount: 4 }, partition: 0 },
    { key: "alice", value: { amount: 2 }, partition: 0 },
  ]);
  await driver.runUntilQuiet();
  const active = await activeInstance(driver.instances(), "0_0");

  const text = await (await call("/metrics")).text();
  const sample = (reason: string) => {
    const line = text
      .split("\n")
      .find(
        (l) =>
          l.startsWith("edge_streams_task_dropped_records_total{") &&
          l.includes(`task="0_0"`) &&
          l.includes(`placement="${active.placement}"`) &&
          l.includes(`reason="${reason}"`),
      );
    return line === undefined ? undefined : Number(line.split(" ").pop());
  };
  expect(text).toMatch(/# TYPE edge_streams_task_dropped_records_total counter/);
  expect(sample("invalid")).toBe(1);
  expect(sample("deserialization")).toBe(0);
  expect(sample("late")).toBe(0);

  const tasks = (await json(await call("/tasks"))) as { tasks: { id: string; role: string; droppedRecords: number }[] };
  expect(tasks.tasks.find((t) => t.id === "0_0" && t.role === "active")!.droppedRecords).toBe(1);
  expect(tasks.tasks.filter((t) => t.id !== "0_0" && t.role === "active").every((t) => t.droppedRecords === 0)).toBe(true);
});
