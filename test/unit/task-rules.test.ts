import { describe, expect, it } from "vitest";
import { assignActives } from "../../src/coordinator/assignor";
import { canApplyRestoreBatch, checkpointAfterAck, checkpointAfterRestore } from "../../src/task/checkpoint";
import { canTransition, IllegalStateTransition, TASK_STATES, transition, type TaskState } from "../../src/task/state";
import { mergeByTimestamp } from "../../src/task/partition-group";
import type { ChangelogWork } from "../../src/restore/registry";
import { suspensionsOnEnd, suspensionsOnRegister, registrationEnded } from "../../src/restore/suspensions";

describe("checkpoint rules (I1)", () => {
  it("advances on an acknowledged changelog batch of the current incarnation", () => {
    expect(checkpointAfterAck({ incarnation: 3, checkpoint: 10 }, { incarnation: 3, endOffset: 15 })).toBe(15);
    expect(checkpointAfterAck({ incarnation: 3, checkpoint: null }, { incarnation: 3, endOffset: 4 })).toBe(4);
  });

  it("never moves backwards", () => {
    expect(checkpointAfterAck({ incarnation: 1, checkpoint: 20 }, { incarnation: 1, endOffset: 15 })).toBe(20);
  });

  it("ignores an acknowledgement for a wiped incarnation: the KAFKA-16017 case", () => {
    // Records sent before the wipe were acknowledged at offset 100; the revived store restored only 40.
    expect(checkpointAfterAck({ incarnation: 2, checkpoint: 40 }, { incarnation: 1, endOffset: 100 })).toBe(40);
    expect(checkpointAfterAck({ incarnation: 2, checkpoint: null }, { incarnation: 1, endOffset: 100 })).toBeNull();
  });

  it("while restoring, the checkpoint is exactly the restored position", () => {
    const batch = { incarnation: 2, fromOffset: 40, nextOffset: 65, earliest: 0 };
    expect(checkpointAfterRestore({ incarnation: 2, checkpoint: 40 }, batch)).toBe(65);
  });

  it("applies a restore batch only at the current position and incarnation (I4)", () => {
    const at = { incarnation: 2, checkpoint: 40 };
    expect(canApplyRestoreBatch(at, { incarnation: 2, fromOffset: 40, nextOffset: 60, earliest: 0 })).toBe(true);
    expect(canApplyRestoreBatch(at, { incarnation: 2, fromOffset: 20, nextOffset: 40, earliest: 0 })).toBe(false); // duplicate / late
    expect(canApplyRestoreBatch(at, { incarnation: 2, fromOffset: 60, nextOffset: 80, earliest: 0 })).toBe(false); // reordered
    expect(canApplyRestoreBatch(at, { incarnation: 1, fromOffset: 40, nextOffset: 60, earliest: 0 })).toBe(false); // read before a wipe
    expect(checkpointAfterRestore(at, { incarnation: 1, fromOffset: 40, nextOffset: 60, earliest: 0 })).toBe(40);
  });

  it("starts restoring from nothing only at the changelog's earliest offset", () => {
    const fresh = { incarnation: 5, checkpoint: null };
    expect(canApplyRestoreBatch(fresh, { incarnation: 5, fromOffset: 30, nextOffset: 55, earliest: 30 })).toBe(true);
    expect(canApplyRestoreBatch(fresh, { incarnation: 5, fromOffset: 55, nextOffset: 80, earliest: 30 })).toBe(false);
  });
});

describe("task state machine", () => {
  const legal: [TaskState, TaskState][] = [
    ["CREATED", "RESTORING"],
    ["CREATED", "UPDATING"],
    ["RESTORING", "RUNNING"],
    ["RESTORING", "SUSPENDED"],
    ["RUNNING", "SUSPENDED"],
    ["SUSPENDED", "RESTORING"],
    ["SUSPENDED", "UPDATING"],
    ["UPDATING", "RESTORING"],
    ["CLOSED", "CREATED"],
  ];
  it.each(legal)("allows %s -> %s", (from, to) => {
    expect(transition(from, to)).toBe(to);
  });

  const illegal: [TaskState, TaskState][] = [
    ["CREATED", "RUNNING"],
    ["RUNNING", "RESTORING"],
    ["RUNNING", "UPDATING"],
    ["CLOSED", "RUNNING"],
    ["CLOSED", "RESTORING"],
    ["UPDATING", "RUNNING"],
    ["SUSPENDED", "RUNNING"],
  ];
  it.each(illegal)("refuses %s -> %s", (from, to) => {
    expect(() => transition(from, to)).toThrow(IllegalStateTransition);
  });

  it("lets every state but CLOSED close", () => {
    for (const state of TASK_STATES) expect(canTransition(state, "CLOSED")).toBe(state !== "CLOSED");
  });
});

describe("assignor", () => {
  const tasks = ["0_0", "0_1", "0_2", "0_3"];

  it("balances tasks across placements", () => {
    const assigned = assignActives(tasks, ["a", "b"], []);
    expect(assigned.filter((a) => a.placement === "a")).toHaveLength(2);
    expect(assigned.filter((a) => a.placement === "b")).toHaveLength(2);
  });

  it("is sticky: tasks stay where they are while their placement exists", () => {
    const previous = [
      { taskId: "0_0", placement: "b" },
      { taskId: "0_1", placement: "b" },
    ];
    const assigned = assignActives(tasks, ["a", "b"], previous);
    expect(assigned.find((a) => a.taskId === "0_0")!.placement).toBe("b");
    expect(assigned.find((a) => a.taskId === "0_1")!.placement).toBe("b");
    expect(assigned.filter((a) => a.placement === "a").map((a) => a.taskId)).toEqual(["0_2", "0_3"]);
  });

  it("moves tasks off a placement that is gone", () => {
    const assigned = assignActives(tasks, ["a", "c"], [{ taskId: "0_0", placement: "b" }]);
    expect(assigned.every((a) => a.placement === "a" || a.placement === "c")).toBe(true);
  });
});

describe("merging input partitions by timestamp", () => {
  const r = (partition: number, offset: number, timestamp: number) => ({ topic: "t", partition, offset, key: null, value: "", timestamp, headers: [] });
  it("takes the smallest head first and keeps each partition's order", () => {
    const merged = mergeByTimestamp([
      [r(0, 0, 5), r(0, 1, 1)],
      [r(1, 0, 3), r(1, 1, 9)],
    ]);
    expect(merged.map((m) => `${m.partition}:${m.offset}`)).toEqual(["1:0", "0:0", "0:1", "1:1"]);
  });
});

describe("restoration and update suspensions (listeners)", () => {
  const work = (role: "active" | "standby", caughtUp = false): ChangelogWork => ({
    topic: "c",
    partition: 0,
    instance: "0_0@a",
    taskId: "0_0",
    incarnation: 0,
    epoch: 1,
    role,
    store: "s",
    position: 5,
    failures: 0,
    caughtUp,
    restored: 5,
    grown: 0,
  });

  it("suspends an active restoration cut short by a revocation or a wipe, not one that finished", () => {
    expect(suspensionsOnEnd([work("active")], "revoked")).toEqual([{ listener: "restore", work: work("active") }]);
    expect(suspensionsOnEnd([work("active")], "wiped")).toEqual([{ listener: "restore", work: work("active") }]);
    expect(suspensionsOnEnd([work("active")], "finished")).toEqual([]);
    // A changelog already restored to its end was not cut short.
    expect(suspensionsOnEnd([work("active", true)], "revoked")).toEqual([]);
  });

  it("suspends a standby's updates when it is migrated away or promoted, not when it is wiped", () => {
    expect(suspensionsOnEnd([work("standby", true)], "revoked")).toEqual([{ listener: "standby", work: work("standby", true), reason: "migrated" }]);
    expect(suspensionsOnEnd([work("standby")], "wiped")).toEqual([]);
    expect(suspensionsOnRegister([work("standby")], { role: "active", incarnation: 0 })).toEqual([
      { listener: "standby", work: work("standby"), reason: "promoted" },
    ]);
    expect(suspensionsOnRegister([work("standby")], { role: "standby", incarnation: 0 })).toEqual([]);
    expect(suspensionsOnRegister([work("active")], { role: "active", incarnation: 0 })).toEqual([]);
  });

  it("takes the rows of an older incarnation, left by an instance that died before it could unregister them, as ended by its wipe", () => {
    expect(suspensionsOnRegister([work("active")], { role: "active", incarnation: 1 })).toEqual([{ listener: "restore", work: work("active") }]);
    expect(suspensionsOnRegister([work("standby")], { role: "standby", incarnation: 1 })).toEqual([]);
  });

  it("reads from an instance's reply whether the registration a batch was read for is over, and how", () => {
    const at = { incarnation: 2, epoch: 5 };
    expect(registrationEnded(at, { incarnation: 2, epoch: 5, role: "active", state: "RESTORING" })).toBeUndefined();
    expect(registrationEnded(at, { incarnation: 2, epoch: 5, role: "standby", state: "UPDATING" })).toBeUndefined();
    expect(registrationEnded(at, { incarnation: 3, epoch: 5, role: "active", state: "RESTORING" })).toBe("wiped");
    expect(registrationEnded(at, { incarnation: 2, epoch: 6, role: "active", state: "RESTORING" })).toBe("revoked");
    expect(registrationEnded(at, { incarnation: 2, epoch: 5, role: "active", state: "RUNNING" })).toBe("finished");
    expect(registrationEnded(at, { incarnation: 2, epoch: 5, role: "idle", state: "SUSPENDED" })).toBe("revoked");
  });
});
