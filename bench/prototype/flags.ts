/**
 * Prototype switches, from the `PROTO` var (comma-separated):
 *   cache       the task's key-value stores keep a write-through in-memory copy (no SELECT per get)
 *   outbox      the outbox keeps the batches it wrote in memory; flush reads them from there
 *               (the SQLite row stays the durable copy) instead of re-reading and parsing JSON
 *   digest      the log partition skips the per-batch content digest of idempotent appends
 *               (an upper bound of what a cheaper digest can save)
 *   blob        the log keeps one row per appended batch (the records as one JSON text) instead of
 *               one row per record; fetch parses the batches it needs (Kafka's record batches)
 *   batch=N     at most N input records per commit (default 1000)
 *   linger=N    a wake-up by an append runs the task N ms later (not at once), so more input can
 *               gather per commit (Kafka Streams' commit interval; costs up to N ms of latency)
 *   coalesce    store writes and their changelog records are coalesced per key within a commit
 *               (one changelog record per key and commit, carrying the last write's position)
 *   coalesce-out  output records too: one per (topic, partition, key) and commit, the last — what
 *               a KTable cache (Kafka Streams' record cache) forwards downstream
 */
export interface ProtoFlags {
  readonly cache: boolean;
  readonly outbox: boolean;
  readonly digest: boolean;
  readonly blob: boolean;
  readonly coalesce: boolean;
  readonly coalesceOutput: boolean;
  readonly batch: number | undefined;
  readonly linger: number;
}

export function protoFlags(env: unknown): ProtoFlags {
  const raw = String((env as { PROTO?: string }).PROTO ?? "");
  const set = new Set(raw.split(",").map((f) => f.trim()).filter(Boolean));
  const batch = [...set].find((f) => f.startsWith("batch="));
  return {
    cache: set.has("cache"),
    outbox: set.has("outbox"),
    digest: set.has("digest"),
    blob: set.has("blob"),
    coalesce: set.has("coalesce"),
    coalesceOutput: set.has("coalesce-out"),
    batch: batch ? Number(batch.slice(6)) : undefined,
    linger: Number([...set].find((f) => f.startsWith("linger="))?.slice(7) ?? 0),
  };
}
