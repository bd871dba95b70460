/**
 * An assignment the coordinator could not push (the instance died taking it) is pushed again by
 * the coordinator's own alarm: an application without traffic still gets its tasks running. The
 * other instances are told meanwhile, and the call that made the assignment does not fail for it.
 */
import { env } from "cloudflare:workers";
import { runDurableObjectAlarm } from "cloudflare:test";
import { expect, it } from "vitest";
import type { InstanceAssignment } from "../src/coordinator/coordinator-store";
import { COORDINATOR_NAME } from "../src/names";
import type { TaskDescription } from "../src/task/describe";

it("pushes a failed assignment again from its alarm, without any other call", async () => {
  const coordinator = env.COORDINATOR.getByName(COORDINATOR_NAME);
  // Task 0_0's first instance dies while taking its assignment (wherever it is placed).
  for (const placement of ["a", "b"]) await env.TASK_OBJECT.getByName(`0_0@${placement}`).crash("assign:after-meta");
  const assignments = async () => (await coordinator.assignments()) as InstanceAssignment[];
  expect((await coordinator.ensureAssigned()).length).toBeGreaterThan(0);
  const pending = (await assignments()).find((i) => i.taskId === "0_0")!;
  expect(pending.acknowledged).toBe(false);
  expect((await assignments()).filter((i) => i.taskId !== "0_0").every((i) => i.acknowledged)).toBe(true);

  expect(await runDurableObjectAlarm(coordinator)).toBe(true);
  expect((await assignments()).every((i) => i.acknowledged)).toBe(true);
  const described = (await env.TASK_OBJECT.getByName(`0_0@${pending.placement}`).describe()) as TaskDescription;
  expect(described).toMatchObject({ role: "active", state: "RUNNING", epoch: pending.epoch });
});
