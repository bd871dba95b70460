/**
 * The group's offset in a wake-up's answer, and what a wake-up's telling counts as taken
 * (src/task/wake-commits.ts): pure.
 */
import { describe, expect, it } from "vitest";
import type { Application } from "../../src/application";
import type { TaskMeta } from "../../src/task/task-storage";
import { answeredCommit, heldAsTold } from "../../src/task/wake-commits";

const application = { groupId: "app", isGlobalInput: (_task: string, topic: string) => topic === "rates" } as unknown as Application;
const meta = (over: Partial<TaskMeta> = {}) =>
  ({ taskId: "0_3", placement: "eu", role: "active", state: "RUNNING", epoch: 7, incarnation: 1, ...over }) as TaskMeta;
const orders = { topic: "orders", partition: 3 };

describe("answeredCommit", () => {
  it("answers with the position the group is not known to hold, under the instance's epoch", () => {
    expect(answeredCommit(meta(), orders, application, { "orders/3": 12 }, 7_000_001)).toEqual({
      group: "app",
      committed: { offset: 12, metadata: "epoch=7", epoch: 7_000_001 },
    });
  });

  it("answers nothing when the group holds it, nothing was processed there, for a global table's input, or from an instance not running as the active", () => {
    expect(answeredCommit(meta(), orders, application, {}, 1)).toBeUndefined();
    expect(answeredCommit(meta(), orders, application, { "orders/3": 0 }, 1)).toBeUndefined();
    expect(answeredCommit(meta(), { topic: "rates", partition: 0 }, application, { "rates/0": 4 }, 1)).toBeUndefined();
    expect(answeredCommit(meta({ role: "standby" }), orders, application, { "orders/3": 12 }, 1)).toBeUndefined();
    expect(answeredCommit(meta({ state: "SUSPENDED" } as Partial<TaskMeta>), orders, application, { "orders/3": 12 }, 1)).toBeUndefined();
  });
});

describe("heldAsTold", () => {
  const facts = { application, positions: { "orders/3": 20 }, committed: { "orders/3": 10 } };

  it("counts what the group holds beyond what it is known to hold, up to the instance's own position", () => {
    expect(heldAsTold(meta(), orders, 15, facts)).toEqual({ "orders/3": 15 });
    expect(heldAsTold(meta(), orders, 25, facts)).toEqual({ "orders/3": 20 });
  });

  it("counts nothing already known, nothing untold, nothing for a global table's input or an instance not running as the active", () => {
    expect(heldAsTold(meta(), orders, 10, facts)).toBeUndefined();
    expect(heldAsTold(meta(), orders, 4, facts)).toBeUndefined();
    expect(heldAsTold(meta(), orders, undefined, facts)).toBeUndefined();
    expect(heldAsTold(meta(), { topic: "rates", partition: 0 }, 15, { ...facts, positions: { "rates/0": 20 } })).toBeUndefined();
    expect(heldAsTold(meta({ role: "standby" }), orders, 15, facts)).toBeUndefined();
  });
});
