/**
 * A subscription's snapshot across the watched partitions: each owning task's RUNNING active
 * instance answers its committed entries with the changelog offset they reflect
 * (src/task/committed-read.ts). An instance whose changelog batch is on its way to the log, or a
 * task between owners, is asked again shortly, within a bound; a restoring one answers 503 with
 * its progress, as a point read does.
 */
import type { Host } from "../../platform/host";
import { compareKeys } from "../../src/streams/state/key-value-store";
import type { StoreDefinition, Subtopology } from "../../src/streams/topology/topology";
import type { Snapshot } from "../../src/subscriptions/watch-loop";
import type { SnapshotAnswer, SnapshotSelection } from "../../src/task/protocol";
import { askActive } from "./cluster";
import { ApiError } from "./http-error";

/** How long a snapshot waits for an instance that cannot answer yet (a send under way, a move). */
export const SNAPSHOT_WAIT_MS = 5_000;
/** Most keys a prefix subscription's snapshot holds (docs/subscriptions.md): a longer prefix narrows it. */
export const MAX_SNAPSHOT_KEYS = 1_000;

export interface WatchedStore {
  readonly store: StoreDefinition;
  readonly subtopology: Subtopology;
}

/** The snapshot of `selection` in the store's changelog `partitions`; 400 with `tooMany` past `MAX_SNAPSHOT_KEYS` entries. */
export async function takeSnapshot(
  host: Host,
  found: WatchedStore,
  partitions: readonly number[],
  selection: SnapshotSelection,
  tooMany = `prefix: more than ${MAX_SNAPSHOT_KEYS} keys of store ${found.store.name} have it; watch a longer prefix`,
): Promise<Snapshot> {
  const parts = await Promise.all(partitions.map((partition) => partitionSnapshot(host, found, partition, selection)));
  const entries = parts.flatMap((p) => p.entries);
  if (entries.length > MAX_SNAPSHOT_KEYS) throw new ApiError(400, "invalid_input", tooMany);
  // In key order as scans give it (UTF-8 bytes).
  entries.sort((a, b) => compareKeys(a.key, b.key));
  return { entries, positions: new Map(parts.map((p, i) => [partitions[i]!, p.offset])) };
}

async function partitionSnapshot(host: Host, found: WatchedStore, partition: number, selection: SnapshotSelection) {
  const name = found.store.name;
  const taskId = host.application.taskForStorePartition(found.subtopology, partition);
  const deadline = Date.now() + SNAPSHOT_WAIT_MS;
  for (let wait = 20; ; wait = Math.min(wait * 2, 500)) {
    const answer = await askActive(host, taskId, async (stub) => (await stub.snapshot(name, selection)) as SnapshotAnswer);
    if (answer?.status === "ok") {
      const offset = answer.offset ?? (await host.log.offsets({ topic: found.store.changelogTopic, partition })).earliest;
      return { entries: answer.entries, offset };
    }
    if (answer?.status === "restoring") throw new ApiError(503, "unavailable", `task ${taskId} is restoring`, 1);
    if (Date.now() + wait > deadline) throw new ApiError(503, "unavailable", `task ${taskId} cannot give a snapshot right now`, 1);
    await new Promise((resolve) => setTimeout(resolve, wait));
  }
}
