import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { TestDriver } from "../platform/testing/test-driver";
import { application } from "./support/orders-app";
import { call, json } from "./support/api";

const driver = new TestDriver(env, application);

describe("the example application end to end", () => {
  it("folds orders into per-customer totals, with changelog and output", async () => {
    await driver.pipe("orders", [
      { key: "alice", value: { amount: 10 } },
      { key: "bob", value: { amount: 5 } },
      { key: "alice", value: { amount: 2.5 } },
    ]);
    await driver.runUntilQuiet();
    expect(await driver.get("totals", "alice")).toEqual({ count: 2, sum: 12.5 });
    expect(await driver.get("totals", "bob")).toEqual({ count: 1, sum: 5 });
    const changelog = await driver.read("edge-streams-totals-changelog");
    expect(changelog.filter((r) => r.key === "alice").map((r) => JSON.parse(r.value))).toEqual([
      { count: 1, sum: 10 },
      { count: 2, sum: 12.5 },
    ]);
    const output = await driver.read("totals");
    expect(output.filter((r) => r.key === "alice").map((r) => JSON.parse(r.value))).toEqual([
      { count: 1, sum: 10 },
      { count: 2, sum: 12.5 },
    ]);

    const response = await call("/stores/totals/keys/alice");
    expect(response.status).toBe(200);
    expect(await json(response)).toMatchObject({ key: "alice", value: { count: 2, sum: 12.5 }, stale: false });
  });

  it("stamps each total with its latest order's time, even when orders arrive out of order (Kafka's timestamps)", async () => {
    await driver.pipe("orders", [
      { key: "tess", value: { amount: 1 }, timestamp: 5_000 },
      { key: "tess", value: { amount: 2 }, timestamp: 3_000 },
    ]);
    await driver.runUntilQuiet();
    const stamped = (topic: string) =>
      driver.read(topic).then((records) => records.filter((r) => r.key === "tess").map((r) => [JSON.parse(r.value), r.timestamp]));
    const expected = [
      [{ count: 1, sum: 1 }, 5_000],
      [{ count: 2, sum: 3 }, 5_000],
    ];
    expect(await stamped("totals")).toEqual(expected);
    // The changelog carries the same timestamps: a restored store keeps them.
    expect(await stamped("edge-streams-totals-changelog")).toEqual(expected);
  });

  it("lists tasks with their state and lag", async () => {
    await driver.runUntilQuiet();
    const response = await call("/tasks");
    expect(response.status).toBe(200);
    const { tasks } = await json(response);
    expect(tasks.map((t: { id: string }) => t.id).sort()).toEqual(["0_0", "0_1", "0_2", "0_3"]);
    for (const task of tasks) {
      expect(task).toMatchObject({ role: "active", state: "RUNNING", lag: 0 });
      expect(task.changelogs[0].checkpoint ?? 0).toBe(task.changelogs[0].end);
    }
  });
});
