/**
 * What the Durable Objects call of each other, and what each is given by the Worker that hosts
 * it (`ObjectHost`): the application, its configuration and log, and stubs of the other objects.
 * Declared here, below every object class, so that no object imports another, the HTTP layer or
 * the bindings; each class `implements` the calls others make of it, so the two cannot drift.
 */
import type { Application } from "../src/application";
import type { Config } from "../src/config";
import type { ApplicationShutdown, InstanceAssignment } from "../src/coordinator/coordinator-store";
import type { PushedFetch, WakeTold } from "../src/log/pushed-fetches";
import type { Log, TopicPartition } from "../src/log/types";
import type { Registration } from "../src/restore/registry";
import type { CorruptedInstance } from "../src/restore/restorer";
import type { RegistrationEnd } from "../src/restore/suspensions";
import type { InstanceReport } from "../src/summary/summary";
import type { PartialTaskDescription, TaskDescription } from "../src/task/describe";
import type { Assignment, InstanceAck, RestoreBatch, RestoreReply, SkipAnswer, SnapshotAnswer, SnapshotSelection } from "../src/task/protocol";
import type { AppliedReset, InputReset } from "../src/task/input-reset";
import type { RecordOrigin } from "../src/streams/errors";

/** What the coordinator and the restore worker call of a task object (and a log partition's wake-up). */
export interface TaskObjectCalls {
  assign(assignment: Assignment): Promise<InstanceAck>;
  check(assignment: Assignment): Promise<InstanceAck | undefined>;
  revoke(): Promise<InstanceAck | undefined>;
  halt(reason: string): Promise<TaskDescription>;
  resume(): Promise<TaskDescription>;
  /** Passes over the record the instance stopped at; with `halted`, it stays stopped with that reason (the application is shut down). */
  skip(at: RecordOrigin, halted?: string): Promise<SkipAnswer>;
  /** Applies an input reset to the task (undefined: not the active instance). */
  resetInput(reset: InputReset, halted?: string): Promise<AppliedReset | undefined>;
  describe(): Promise<TaskDescription>;
  corrupt(incarnation?: number): Promise<TaskDescription | PartialTaskDescription>;
  applyRestoreBatch(batch: RestoreBatch): Promise<RestoreReply>;
  /**
   * Input arrived (or may have). Answers the time before which the instance looks at its input
   * anyway (a task under load looks at its next commit), so that wake-ups until then
   * can be skipped; null when it relies on wake-ups. After an append, `pushed` is the fetch a
   * caught-up instance would make next (src/log/pushed-fetches.ts); `told`, the partition and its
   * end as the wake-up left (src/task/quiet-inputs.ts).
   */
  wake(pushed?: PushedFetch, echo?: boolean, told?: WakeTold): Promise<number | null>;
  /** A subscription's snapshot (a subscription hub's fresh one after a resync): RUNNING active only. */
  snapshot(store: string, selection: SnapshotSelection): Promise<SnapshotAnswer>;
}

/** A task's request to shut the whole application down (its uncaught error chose `"shutdown-application"`). */
export interface ShutdownRequest {
  readonly taskId: string;
  readonly placement: string;
  readonly reason: string;
}

/** What task objects, restore workers and log partitions call of the coordinator. */
export interface CoordinatorCalls {
  shutdownApplication(request: ShutdownRequest): Promise<ApplicationShutdown>;
  reportCorruption(corrupted: readonly CorruptedInstance[]): Promise<void>;
  /** A partition's first append while no one listened: the tasks reading it are made if they are not yet. */
  inputArrived(tp: TopicPartition): Promise<void>;
  /** The assignment (a subscription hub finds a task's active instance by it, src/coordinator/assignment-view.ts). */
  snapshot(): Promise<AssignmentSnapshot>;
}

/** The assignment as the API caches it: every instance, and its version (the last epoch handed out). */
export interface AssignmentSnapshot {
  /** Names the coordinator's storage: a new one (its storage deleted) starts versions over. */
  readonly generation: string;
  readonly version: number;
  readonly instances: InstanceAssignment[];
}

/** A page of the assignment (`GET /tasks`): instances in task and placement order, the total, and the shutdown. */
export interface AssignmentPage extends AssignmentSnapshot {
  readonly total: number;
  /** More instances follow the last one of this page. */
  readonly more: boolean;
  readonly shutdown: ApplicationShutdown | null;
}

/** What task objects and log partitions call of a restore worker. */
export interface RestoreWorkerCalls {
  /** `worker`: the name the instance reached this worker by (its shard), which its changelogs wake. */
  register(registration: Registration & { placement: string; worker?: string }): Promise<boolean>;
  unregister(instance: string, incarnation: number, end?: RegistrationEnd, epoch?: number): Promise<void>;
  /** A changelog grew; true: the worker reads it after this wake-up (its next round), so appends until it fetched need not wake it. */
  wake(source?: TopicPartition): Promise<boolean>;
  /** An instance of the shard says what it is now, for the application summary. */
  report(report: InstanceReport): Promise<void>;
}

/** What task objects and restore workers call of a log partition besides the log itself: wake-up subscriptions. */
export interface PartitionCalls {
  subscribe(name: string): void | Promise<void>;
  unsubscribe(name: string): void | Promise<void>;
}

/** What log partitions call of a subscription hub (docs/subscriptions.md). */
export interface SubscriptionHubCalls {
  /** Its changelog partition grew: push what is new to the sockets. */
  wake(source?: TopicPartition): Promise<void>;
}

/** What a consumer group calls of the group directory. */
export interface GroupDirectoryCalls {
  addGroup(group: string): void | Promise<void>;
  removeGroup(group: string): void | Promise<void>;
}

/** Stubs of the other objects, by their durable names (src/names.ts). */
export interface ObjectDirectory {
  taskObject(name: string): TaskObjectCalls;
  coordinator(): CoordinatorCalls;
  /** A restore worker by its object name (`restoreWorkerName(placement, shard)`). */
  restoreWorker(name: string): RestoreWorkerCalls;
  /** A subscriber that hears of appends by answering (`hearsByAnswering`): a restore worker or a subscription hub. */
  listener(name: string): { wake(source?: TopicPartition): Promise<boolean | undefined | void> };
  partition(tp: TopicPartition): PartitionCalls;
  groupDirectory(): GroupDirectoryCalls;
}

/** What the hosting Worker gives every object: built once per application and environment. */
export interface ObjectHost {
  readonly application: Application;
  readonly config: Config;
  /** Restore workers per placement. */
  readonly restoreShards: number;
  /** The name of the restore worker serving an instance (its placement's shard for its task). */
  restoreWorkerNameOf(instance: { readonly taskId: string; readonly placement: string }): string;
  readonly log: Log;
  readonly objects: ObjectDirectory;
}
