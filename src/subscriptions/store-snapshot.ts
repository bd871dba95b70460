/**
 * A store subscription's snapshot across the watched changelog partitions (docs/subscriptions.md):
 * each owning task's RUNNING active instance answers its committed entries with the changelog
 * offset they reflect (src/task/committed-read.ts). An instance whose changelog batch is on its way
 * to the log, or a task between owners, is asked again shortly, within a bound; a restoring one is
 * refused as a point read is. Taken by the Worker when a subscription opens (workers/api/watch-snapshot.ts)
 * and by a subscription hub for the fresh snapshot after a resync (durable-objects/subscription-hub.ts).
 * Platform-free: the caller asks the task (src/coordinator/assignment-view.ts) and reads the log.
 */
import { compareKeys } from "../streams/state/key-value-store";
import type { StoreDefinition, Subtopology } from "../streams/topology/topology";
import type { OffsetRange, TopicPartition } from "../log/types";
import type { SnapshotAnswer, SnapshotSelection } from "../task/protocol";
import type { Snapshot } from "./watch-loop";

/** How long a snapshot waits for an instance that cannot answer yet (a send under way, a move). */
export const SNAPSHOT_WAIT_MS = 5_000;
/** Most keys a prefix subscription's snapshot holds (docs/subscriptions.md): a longer prefix narrows it. */
export const MAX_SNAPSHOT_KEYS = 1_000;

export interface WatchedStore {
  readonly store: StoreDefinition;
  readonly subtopology: Subtopology;
}

/** A snapshot that cannot be taken: `status` 400 (too many keys) or 503 (the task restores, or cannot answer yet). */
export class SnapshotRefused extends Error {
  constructor(
    readonly status: 400 | 503,
    message: string,
  ) {
    super(message);
    this.name = "SnapshotRefused";
  }
}

export interface SnapshotPorts {
  /** The answer of the active instance of `taskId` (undefined: none answers as the owner now). */
  ask(taskId: string, store: string, selection: SnapshotSelection): Promise<SnapshotAnswer | undefined>;
  /** The partition's offsets (the earliest, for a store that reflects nothing of its changelog yet). */
  offsets(tp: TopicPartition): Promise<OffsetRange>;
  /** The task whose stores own a changelog partition. */
  taskOf(subtopology: Subtopology, partition: number): string;
  now(): number;
  sleep(ms: number): Promise<void>;
}

/**
 * The ports as the Worker and a hub give them: `ask` reaches the owning task's active instance their
 * own way (src/coordinator/assignment-view.ts); the log and the application are the host's.
 */
export function snapshotPorts(
  ask: SnapshotPorts["ask"],
  log: { offsets(tp: TopicPartition): Promise<OffsetRange> },
  application: { taskForStorePartition(subtopology: Subtopology, partition: number): string },
): SnapshotPorts {
  return {
    ask,
    offsets: (tp) => log.offsets(tp),
    taskOf: (subtopology, partition) => application.taskForStorePartition(subtopology, partition),
    now: () => Date.now(),
    sleep: (ms) => new Promise<void>((resolve) => setTimeout(() => resolve(), ms)),
  };
}

/** The snapshot of `selection` in the store's changelog `partitions`; refused (400) with `tooMany` past `MAX_SNAPSHOT_KEYS` entries. */
export async function takeSnapshot(
  ports: SnapshotPorts,
  found: WatchedStore,
  partitions: readonly number[],
  selection: SnapshotSelection,
  tooMany = `prefix: more than ${MAX_SNAPSHOT_KEYS} keys of store ${found.store.name} have it; watch a longer prefix`,
): Promise<Snapshot> {
  const parts = await Promise.all(partitions.map((partition) => partitionSnapshot(ports, found, partition, selection)));
  const entries = parts.flatMap((p) => p.entries);
  if (entries.length > MAX_SNAPSHOT_KEYS) throw new SnapshotRefused(400, tooMany);
  // In key order as scans give it (UTF-8 bytes).
  entries.sort((a, b) => compareKeys(a.key, b.key));
  return { entries, positions: new Map(parts.map((p, i) => [partitions[i]!, p.offset])) };
}

async function partitionSnapshot(ports: SnapshotPorts, found: WatchedStore, partition: number, selection: SnapshotSelection) {
  const taskId = ports.taskOf(found.subtopology, partition);
  const deadline = ports.now() + SNAPSHOT_WAIT_MS;
  for (let wait = 20; ; wait = Math.min(wait * 2, 500)) {
    const answer = await ports.ask(taskId, found.store.name, selection);
    if (answer?.status === "ok") {
      const offset = answer.offset ?? (await ports.offsets({ topic: found.store.changelogTopic, partition })).earliest;
      return { entries: answer.entries, offset };
    }
    if (answer?.status === "restoring") throw new SnapshotRefused(503, `task ${taskId} is restoring`);
    if (ports.now() + wait > deadline) throw new SnapshotRefused(503, `task ${taskId} cannot give a snapshot right now`);
    await ports.sleep(wait);
  }
}
