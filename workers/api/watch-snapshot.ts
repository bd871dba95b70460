/**
 * A subscription's snapshot, taken by the Worker (src/subscriptions/store-snapshot.ts): the owning
 * tasks asked through this host (./cluster.ts); a refusal answers as a point read does (503 with
 * `Retry-After` while a task restores or cannot answer yet, 400 for too many keys).
 */
import type { Host } from "../../platform/host";
import { MAX_SNAPSHOT_KEYS, SnapshotRefused, snapshotPorts, takeSnapshot as take, type WatchedStore } from "../../src/subscriptions/store-snapshot";
import type { Snapshot } from "../../src/subscriptions/watch-loop";
import type { SnapshotAnswer, SnapshotSelection } from "../../src/task/protocol";
import { askActive } from "./cluster";
import { ApiError } from "./http-error";

export { MAX_SNAPSHOT_KEYS, SNAPSHOT_WAIT_MS, type WatchedStore } from "../../src/subscriptions/store-snapshot";

/** The snapshot of `selection` in the store's changelog `partitions`; 400 with `tooMany` past `MAX_SNAPSHOT_KEYS` entries. */
export async function takeSnapshot(
  host: Host,
  found: WatchedStore,
  partitions: readonly number[],
  selection: SnapshotSelection,
  tooMany = `prefix: more than ${MAX_SNAPSHOT_KEYS} keys of store ${found.store.name} have it; watch a longer prefix`,
): Promise<Snapshot> {
  const ports = snapshotPorts(
    (taskId, store, selection) => askActive(host, taskId, async (stub) => (await stub.snapshot(store, selection)) as SnapshotAnswer),
    host.log,
    host.application,
  );
  try {
    return await take(ports, found, partitions, selection, tooMany);
  } catch (error) {
    if (!(error instanceof SnapshotRefused)) throw error;
    throw error.status === 400 ? new ApiError(400, "invalid_input", error.message) : new ApiError(503, "unavailable", error.message, 1);
  }
}
