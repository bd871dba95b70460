/**
 * What the coordinator's parts are given by its Durable Object (durable-objects/coordinator.ts):
 * its store, the calls it makes of task instances, its alarm and its crash points; and the pace
 * they share. Plain interfaces, so that nothing in src/coordinator knows the platform.
 */
import type { CoordinatorStore } from "./coordinator-store";
import type { TaskDescription } from "../task/describe";
import type { AppliedReset, InputReset } from "../task/input-reset";
import type { Assignment, InstanceAck, SkipAnswer } from "../task/protocol";
import type { RecordOrigin } from "../streams/errors";

/** How soon the alarm pushes again what could not be pushed, and re-checks pending automatic moves. */
export const REBALANCE_CHECK_MS = 1_000;

/**
 * Assignments pushed per invocation (each is one subrequest): with the sweep's chunk and the
 * checks of automatic moves, an alarm stays far below the 1,000 subrequests of the Free plan.
 */
export const PUSH_CHUNK = 200;

/** Where converging stands: everything pushed; more to push (at once); or something failed or waits (back off). */
export type Progress = { readonly done: boolean; readonly more: boolean };

/**
 * Points between the awaits of the coordinator's operations where tests can kill it; each must
 * converge from there without outside help.
 */
export type CoordinatorStep =
  /** A migration is stored as the goal (old instance to revoke, new active); nothing pushed. */
  | "migrate:after-intent"
  /** An instance took its assignment (or revocation); the coordinator has not recorded it. */
  | "push:after-instance"
  /** The shutdown is stored; no active instance halted yet. */
  | "shutdown:after-record"
  /** The shutdown is lifted in storage; no instance resumed yet. */
  | "resume:after-clear"
  /** An input reset is stored as the goal; no task told yet. */
  | "reset:after-record";

/** What the coordinator's parts call of a task instance (a `TaskObject` stub answers them). */
export interface InstanceCalls {
  assign(assignment: Assignment): Promise<InstanceAck>;
  check(assignment: Assignment): Promise<InstanceAck | undefined>;
  revoke(): Promise<InstanceAck | undefined>;
  describe(): Promise<TaskDescription>;
  resume(): Promise<TaskDescription>;
  skip(at: RecordOrigin, halted?: string): Promise<SkipAnswer>;
  resetInput(reset: InputReset, halted?: string): Promise<AppliedReset | undefined>;
}

export interface CoordinatorContext {
  readonly store: CoordinatorStore;
  /** The task instance of `taskId` at `placement`. */
  instance(at: { readonly taskId: string; readonly placement: string }): InstanceCalls;
  /** Arms the alarm `delayMs` from now, unless one is armed sooner. */
  armAlarm(delayMs: number): Promise<void>;
  /** The object dies here when a test planned a crash at `step`, once the writes made so far are durable. */
  reach(step: CoordinatorStep): Promise<void>;
}
