/**
 * Appends through `/kafka` (an external producer) never make this deployment's tasks: the
 * producer may be another deployment using this one as its log (LOG_BACKEND=upstash), whose
 * tasks read the same partitions under the same group, epochs and changelogs — tasks of this
 * deployment beside them processed its input too, and a wiped instance of the other deployment
 * then restored to a changelog end that this deployment's task had moved past, skipping a record
 * (test/node/upstash-backend.test.ts). The application's own appends still make them. Its own
 * file: it needs a coordinator that has assigned nothing yet.
 */
import { env } from "cloudflare:workers";
import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { expect, it } from "vitest";
import { application } from "./support/orders-app";
import type { InstanceAssignment } from "../src/coordinator/coordinator-store";
import { COORDINATOR_NAME, topicPartition } from "../src/names";
import { TestDriver } from "../platform/testing/test-driver";
import { keysOn } from "./support/keys";
import { until } from "./support/until";
import { kafka, ok } from "./kafka-rest/support";

const driver = new TestDriver(env, application);
const coordinator = env.COORDINATOR.getByName(COORDINATOR_NAME);

it("an external producer's first append to a task input makes no tasks; the application's own append does", async () => {
  const assigned = async () => (await coordinator.assignments()) as InstanceAssignment[];
  expect(await assigned()).toEqual([]);
  const tp = { topic: "orders", partition: 1 };
  const partition = env.LOG_PARTITION.getByName(topicPartition(tp));
  const [key] = keysOn(tp.partition, 1, "external-input");
  const callsBefore = await coordinator.callsReceived();

  await ok(kafka("/produce", { body: { topic: tp.topic, partition: tp.partition, key, value: '{"amount":3}' } }));
  // Whatever call to the coordinator the append started has ended (bounded: it cannot hang).
  const telling = () => runInDurableObject(partition, (object) => (object as unknown as { tellingCoordinator: boolean }).tellingCoordinator);
  await until(async () => !(await telling()), 10_000, "the partition to have no call to the coordinator on its way");
  // Nor does the partition's alarm (its retry path) tell it.
  await runDurableObjectAlarm(partition);
  await until(async () => !(await telling()), 10_000, "the partition's alarm to finish telling");
  const kv = (k: string) => runInDurableObject(partition, (_, state) => state.storage.kv.get(k));
  expect(await kv("coordinator-told")).toBeUndefined();
  expect(await kv("coordinator-owed")).toBeUndefined();
  expect(await coordinator.callsReceived()).toBe(callsBefore);
  expect(await assigned()).toEqual([]);

  // The application's own append to the same partition still makes the tasks.
  await driver.log.append(tp, [{ key: key!, value: '{"amount":4}' }]);
  await until(async () => (await assigned()).some((i) => i.taskId === "0_1" && i.role === "active" && i.acknowledged), 10_000, "task 0_1 to be assigned");
  // The partition writes down that the coordinator heard once its call returns, which may be after
  // the coordinator already assigned the task.
  await until(async () => (await kv("coordinator-told")) !== undefined, 10_000, "the partition to note the coordinator heard");
  expect(await kv("coordinator-owed")).toBeUndefined();
});
