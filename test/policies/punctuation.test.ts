/**
 * Wall-clock punctuation on the real runtime: nothing drains the tasks by hand here. Their alarms
 * process the input and then run the punctuator when it is due, which flushes pending counts to
 * the `policies-flushed` store and topic — exactly once, with no input arriving meanwhile.
 */
import { env } from "cloudflare:workers";
import { runInDurableObject } from "cloudflare:test";
import { expect, it } from "vitest";
import { application } from "./app";
import { partitionForKey } from "../../src/log/partitioner";
import { TestDriver } from "../../platform/testing/test-driver";
import { call, json } from "../support/api";
import { until } from "../support/until";
import { PUNCTUATE_EVERY_MS } from "./app";

const driver = new TestDriver(env, application);

async function stored(store: string, key: string): Promise<number | undefined> {
  const response = await call(`/stores/${store}/keys/${encodeURIComponent(key)}`);
  if (response.status === 404) return undefined;
  expect(response.status).toBe(200);
  return (await json(response)).value as number;
}

it("flushes pending counts on the task's alarm, exactly once, with no input arriving", async () => {
  const response = await call("/topics/policies-events/records", {
    body: {
      records: [
        { key: "k1", value: {} },
        { key: "k1", value: {} },
        { key: "k2", value: {} },
      ],
    },
  });
  expect(response.status).toBe(200);
  await until(
    async () => (await stored("policies-flushed", "k1")) === 2 && (await stored("policies-flushed", "k2")) === 1,
    10_000,
    "the punctuator to flush k1 and k2",
    50,
  );
  expect(await stored("policies-pending", "k1")).toBeUndefined();
  // Later punctuations find nothing pending and send nothing more.
  await until(
    async () => {
      const text = await (await call("/metrics")).text();
      const task = `0_${partitionForKey("k1", 2)}`;
      const line = text.split("\n").find((l) => l.startsWith(`edge_streams_task_punctuations_total{task="${task}"`));
      return Number(line?.split(" ").pop() ?? 0) >= 3;
    },
    10_000,
    "more punctuations of k1's task",
    50,
  );
  const flushed = (await driver.read("policies-flushed")).map((r) => [r.key, r.value]);
  expect(flushed.sort()).toEqual([
    ["k1", "2"],
    ["k2", "1"],
  ]);
});

it("keeps one alarm armed for the next punctuation of an idle task", async () => {
  const instance = (await driver.instances()).find((i) => i.role === "active")!;
  await driver.task(instance).drain();
  // An alarm running right now has no alarm set until it ends (then it arms the next one).
  const object = env.TASK_OBJECT.getByName(`${instance.taskId}@${instance.placement}`);
  const armed = () => runInDurableObject(object, (_, state) => state.storage.getAlarm());
  // Armed at most one interval ahead: the punctuator's next time.
  await until(
    async () => {
      const alarm = await armed();
      return alarm !== null && alarm - Date.now() <= PUNCTUATE_EVERY_MS;
    },
    5_000,
    "the task's alarm to be armed for its next punctuation",
    10,
  );
});
