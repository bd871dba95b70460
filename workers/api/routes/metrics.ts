/**
 * `GET /metrics`: the Prometheus text exposition format (0.0.4). Per task instance, labelled
 * `task`, `placement` and `role`: records processed, restored and applied as a standby (counters
 * in records, and their rates per second over the last 10 s), commit latency, records left to
 * restore, lag, corruptions (= the incarnation: every wipe starts a new one), migrations away
 * from the instance, the processors' events (records dropped by reason, late records dropped, handled processing and
 * production errors, punctuations), uncaught errors by policy, and whether the instance is stopped. Counters kept in memory restart at zero with their object, as a process's do.
 */
import { Hono } from "hono";
import type { Log } from "../../../src/log/types";
import type { TopicCatalog } from "../../../src/log/topics";
import type { ApiEnv } from "../context";
import { clusterSnapshot, remainingToRestore, type ClusterSnapshot } from "../status/snapshot";

export const PROMETHEUS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8";

type Labels = Readonly<Record<string, string>>;
type Sample = { readonly labels: Labels; readonly value: number; readonly suffix?: string };

interface Family {
  readonly name: string;
  readonly type: "counter" | "gauge" | "summary";
  readonly help: string;
  readonly samples: Sample[];
}

function escapeLabel(value: string): string {
  return value.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n");
}

function formatValue(value: number): string {
  if (Number.isNaN(value)) return "NaN";
  if (!Number.isFinite(value)) return value > 0 ? "+Inf" : "-Inf";
  return Number.isInteger(value) ? String(value) : String(Math.round(value * 1e6) / 1e6);
}

/** Families in the text format: HELP and TYPE lines, then one line per sample. */
export function exposition(families: readonly Family[]): string {
  const lines: string[] = [];
  for (const family of families) {
    lines.push(`# HELP ${family.name} ${family.help.replace(/\\/g, "\\\\").replace(/\n/g, "\\n")}`, `# TYPE ${family.name} ${family.type}`);
    for (const sample of family.samples) {
      const labels = Object.entries(sample.labels).map(([k, v]) => `${k}="${escapeLabel(v)}"`);
      lines.push(`${family.name}${sample.suffix ?? ""}${labels.length ? `{${labels.join(",")}}` : ""} ${formatValue(sample.value)}`);
    }
  }
  return `${lines.join("\n")}\n`;
}

export function metricFamilies(snapshot: ClusterSnapshot): Family[] {
  const family = (name: string, type: Family["type"], help: string): Family => ({ name: `edge_streams_${name}`, type, help, samples: [] });
  const up = family("task_up", "gauge", "1 when the task instance answered this scrape, 0 when it did not.");
  const info = family("task_info", "gauge", "The task instance's lifecycle state, as a label (value always 1).");
  const epoch = family("task_epoch", "gauge", "The coordinator epoch of the instance's assignment.");
  const incarnation = family("task_incarnation", "gauge", "The instance's incarnation: bumped by every wipe.");
  const processed = family("task_processed_records_total", "counter", "Input records processed and committed.");
  const processedRate = family("task_processed_records_per_second", "gauge", "Input records processed per second over the last 10 s.");
  const latency = family("task_commit_latency_seconds", "summary", "Commit latency: from the commit's transaction until the log acknowledged its records.");
  const latencyLast = family("task_commit_latency_last_seconds", "gauge", "Latency of the most recent commit.");
  const latencyMax = family("task_commit_latency_max_seconds", "gauge", "Largest commit latency seen.");
  const restored = family("task_restored_records_total", "counter", "Changelog records applied while restoring (active instances).");
  const restoreRate = family("task_restore_records_per_second", "gauge", "Changelog records restored per second over the last 10 s.");
  const standby = family("task_standby_records_total", "counter", "Changelog records applied as a standby.");
  const standbyRate = family("task_standby_records_per_second", "gauge", "Changelog records applied as a standby per second over the last 10 s.");
  const remaining = family(
    "task_restore_remaining_records",
    "gauge",
    "Changelog records still to apply before the instance is caught up (restoring or standby).",
  );
  const lag = family(
    "task_lag_records",
    "gauge",
    "Active: input records not yet processed and committed. Standby and idle: changelog records not yet applied.",
  );
  const pending = family("task_pending_batches", "gauge", "Outgoing batches committed locally and not yet acknowledged by the log.");
  const corruptions = family("task_corruptions_total", "counter", "Times the instance was found corrupted, closed dirty and wiped (its incarnation).");
  const migrations = family("task_migrations_total", "counter", "Times the active instance here was revoked to move to another placement.");
  const inputResets = family(
    "task_input_resets_total",
    "counter",
    "Times input was gone below the task's position (deleted by retention) and the task resumed at the earliest offset kept: records lost.",
  );
  const late = family(
    "task_late_records_dropped_total",
    "counter",
    "Records dropped because the window they belong to had closed (stream time past its end + grace).",
  );
  const dropped = family(
    "task_dropped_records_total",
    "counter",
    "Records dropped (Kafka's dropped-records), by reason: deserialization (skipped by the handler), invalid (a null key where one is needed), late (too late for their window).",
  );
  const processingErrors = family(
    "task_processing_errors_total",
    "counter",
    "Processing errors handled by the topology's handler, by outcome (continued or dead-lettered).",
  );
  const productionErrors = family(
    "task_production_errors_total",
    "counter",
    "Output records that could not be produced, handled by the topology's handler, by outcome.",
  );
  const punctuations = family("task_punctuations_total", "counter", "Punctuator calls (stream-time and wall-clock) in committed work.");
  const uncaught = family(
    "task_uncaught_errors_total",
    "counter",
    "Errors that escaped processing and rolled a commit back, by the uncaught-error policy applied.",
  );
  const failed = family("task_failed", "gauge", "1 while the instance is stopped by a failure (an uncaught error, fencing, an application shutdown).");
  const shutdown = family("application_shutdown", "gauge", "1 while the application is shut down by an uncaught error (every task stopped), else 0.");
  shutdown.samples.push({ labels: {}, value: snapshot.shutdown ? 1 : 0 });
  const paused = family("restore_paused", "gauge", "1 while restoration at the placement is paused (it may still have a batch budget).");

  for (const instance of snapshot.instances) {
    const labels = { task: instance.id, placement: instance.placement, role: instance.role };
    up.samples.push({ labels, value: instance.up ? 1 : 0 });
    epoch.samples.push({ labels, value: instance.epoch });
    if (!instance.up) continue;
    const { counters } = instance;
    info.samples.push({ labels: { ...labels, state: instance.state }, value: 1 });
    incarnation.samples.push({ labels, value: instance.incarnation });
    processed.samples.push({ labels, value: counters.processed.total });
    processedRate.samples.push({ labels, value: counters.processed.rate });
    latency.samples.push(
      { labels, value: counters.commitLatency.sumMs / 1000, suffix: "_sum" },
      { labels, value: counters.commitLatency.count, suffix: "_count" },
    );
    if (counters.commitLatency.lastMs !== null) latencyLast.samples.push({ labels, value: counters.commitLatency.lastMs / 1000 });
    if (counters.commitLatency.maxMs !== null) latencyMax.samples.push({ labels, value: counters.commitLatency.maxMs / 1000 });
    restored.samples.push({ labels, value: counters.restored.total });
    restoreRate.samples.push({ labels, value: counters.restored.rate });
    standby.samples.push({ labels, value: counters.standbyUpdated.total });
    standbyRate.samples.push({ labels, value: counters.standbyUpdated.rate });
    remaining.samples.push({ labels, value: remainingToRestore(instance) });
    lag.samples.push({ labels, value: instance.lag });
    pending.samples.push({ labels, value: instance.pendingBatches });
    corruptions.samples.push({ labels, value: instance.incarnation });
    migrations.samples.push({ labels, value: instance.lifecycle.migrationsAway });
    inputResets.samples.push({ labels, value: instance.lifecycle.inputResets });
    const { events, uncaughtErrors } = counters;
    late.samples.push({ labels, value: events.lateRecordsDropped });
    dropped.samples.push(
      { labels: { ...labels, reason: "deserialization" }, value: events.skippedRecords },
      { labels: { ...labels, reason: "invalid" }, value: events.invalidRecordsDropped },
      { labels: { ...labels, reason: "late" }, value: events.lateRecordsDropped },
    );
    processingErrors.samples.push(
      { labels: { ...labels, outcome: "continued" }, value: events.processingErrorsContinued },
      { labels: { ...labels, outcome: "dead-lettered" }, value: events.processingErrorsDeadLettered },
    );
    productionErrors.samples.push(
      { labels: { ...labels, outcome: "continued" }, value: events.productionErrorsContinued },
      { labels: { ...labels, outcome: "dead-lettered" }, value: events.productionErrorsDeadLettered },
    );
    punctuations.samples.push({ labels, value: events.punctuations });
    for (const [policy, value] of Object.entries(uncaughtErrors)) uncaught.samples.push({ labels: { ...labels, policy }, value });
    failed.samples.push({ labels, value: instance.failure ? 1 : 0 });
  }
  for (const placement of snapshot.placements) {
    if (placement.restorePaused !== null) paused.samples.push({ labels: { placement: placement.name }, value: placement.restorePaused ? 1 : 0 });
  }
  return [
    ...[
      up,
      info,
      epoch,
      incarnation,
      processed,
      processedRate,
      latency,
      latencyLast,
      latencyMax,
      restored,
      restoreRate,
      standby,
      standbyRate,
      remaining,
      lag,
      pending,
      corruptions,
      migrations,
      inputResets,
    ],
    ...[late, dropped, processingErrors, productionErrors, punctuations, uncaught, failed, paused, shutdown],
  ];
}

/**
 * Per topic partition, what it keeps (after retention and compaction) and its configured
 * retention; a partition that does not answer (or a log that cannot say) is left out.
 */
export async function topicFamilies(log: Log, catalog: TopicCatalog): Promise<Family[]> {
  const family = (name: string, help: string): Family => ({ name: `edge_streams_${name}`, type: "gauge", help, samples: [] });
  const records = family("topic_partition_records", "Records the partition keeps now (after retention and compaction).");
  const bytes = family("topic_partition_bytes", "Bytes of keys, values and headers the partition keeps now.");
  const earliest = family("topic_partition_earliest_offset", "The partition's earliest kept offset.");
  const latest = family("topic_partition_latest_offset", "The partition's end offset.");
  const retention = family("topic_retention_ms", "The topic's retention.ms (-1: kept forever); label policy is its cleanup.policy.");
  const partitions = [...catalog.all].flatMap(([topic, count]) => Array.from({ length: count }, (_, partition) => ({ topic, partition })));
  const stats = log.stats ? await Promise.allSettled(partitions.map((tp) => log.stats!(tp))) : [];
  stats.forEach((result, i) => {
    if (result.status !== "fulfilled") return;
    const labels = { topic: partitions[i]!.topic, partition: String(partitions[i]!.partition) };
    records.samples.push({ labels, value: result.value.records });
    bytes.samples.push({ labels, value: result.value.bytes });
    earliest.samples.push({ labels, value: result.value.earliest });
    latest.samples.push({ labels, value: result.value.latest });
  });
  for (const [topic] of catalog.all) {
    const config = catalog.config(topic);
    retention.samples.push({ labels: { topic, policy: config["cleanup.policy"] }, value: config["retention.ms"] });
  }
  return [records, bytes, earliest, latest, retention];
}

export const metrics = new Hono<ApiEnv>().get("/metrics", async (c) => {
  const [snapshot, topics] = await Promise.all([clusterSnapshot(c.var.host, c.get("config")), topicFamilies(c.get("log"), c.var.host.catalog)]);
  return c.body(exposition([...metricFamilies(snapshot), ...topics]), 200, { "Content-Type": PROMETHEUS_CONTENT_TYPE, "Cache-Control": "no-store" });
});
