/**
 * An assignment the coordinator could not push (the instance failed to take it) is pushed again
 * by the coordinator's own alarm: an application without traffic still gets its tasks running.
 * The other instances are told meanwhile.
 */
import { env } from "cloudflare:workers";
import { runDurableObjectAlarm } from "cloudflare:test";
import { expect, it } from "vitest";
import { COORDINATOR_NAME, type InstanceAssignment } from "../src/coordinator/coordinator-store";
import type { TaskDescription } from "../src/task/describe";
import { application } from "../workers/application";

it("pushes a failed assignment again from its alarm, without any other call", async () => {
  const coordinator = env.COORDINATOR.getByName(COORDINATOR_NAME);
  // Task 0_0's first instance cannot read its changelog's end while taking its assignment.
  const changelog = application.changelogPartitions("0_0")[0]!;
  await env.LOG_PARTITION.getByName(`${changelog.topic}/${changelog.partition}`).injectFailures(1);
  // (Not `expect(...).rejects`: reading properties of an RPC promise starts pipelined calls that reject unhandled.)
  const refused = await coordinator.ensureAssigned().then(
    () => undefined,
    (error: unknown) => error,
  );
  expect(String(refused)).toMatch(/injected failure/);
  const assignments = async () => (await coordinator.assignments()) as InstanceAssignment[];
  const pending = (await assignments()).find((i) => i.taskId === "0_0")!;
  expect(pending.acknowledged).toBe(false);
  expect((await assignments()).filter((i) => i.taskId !== "0_0").every((i) => i.acknowledged)).toBe(true);

  expect(await runDurableObjectAlarm(coordinator)).toBe(true);
  expect((await assignments()).every((i) => i.acknowledged)).toBe(true);
  const described = (await env.TASK_OBJECT.getByName(`0_0@${pending.placement}`).describe()) as TaskDescription;
  expect(described).toMatchObject({ role: "active", state: "RUNNING", epoch: pending.epoch });
});
