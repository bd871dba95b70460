/** The active instance of a task, as the tests find it in an assignment. */
import { expect } from "vitest";

/** An instance as the coordinator's assignment (or `TestDriver.instances()`) lists it. */
interface Listed {
  readonly taskId: string;
  readonly role: string;
}

/**
 * The active instance of `task` in `assignment`: a task id (`"0_3"`), or a partition number for
 * the first subtopology's task of that partition (`3` → `"0_3"`). Pass `driver.instances()` to make
 * the assignment first, or the coordinator's `assignments()` to read it as it stands. Fails the
 * test, naming the task, when it has no active instance.
 */
export async function activeInstance<I extends Listed>(assignment: Promise<readonly I[]> | readonly I[], task: string | number): Promise<I> {
  const taskId = typeof task === "number" ? `0_${task}` : task;
  const active = (await assignment).find((i) => i.taskId === taskId && i.role === "active");
  expect(active, `${taskId} has an active instance`).toBeDefined();
  return active as I;
}
