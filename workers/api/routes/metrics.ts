/**
 * `GET /metrics`: the Prometheus text exposition format (0.0.4). Per task instance, labelled
 * `task`, `placement` and `role`: records processed, restored and applied as a standby (counters
 * in records, and their rates per second over the last 10 s), commit latency, records left to
 * restore, lag, corruptions (= the incarnation: every wipe starts a new one), migrations away
 * from the instance, the processors' events (records dropped by reason, late records dropped, handled processing and
 * production errors, punctuations), uncaught errors by policy, whether the instance is stopped, its
 * lag in records and in time, and records skipped by operators and input resets. Records processed
 * is a durable total (it survives the object's restarts); other counters kept in memory restart at
 * zero with their object, as a process's do.
 */
import { zValidator } from "@hono/zod-validator";
import { Hono } from "hono";
import { z } from "zod";
import type { Log, TopicPartition } from "../../../src/log/types";
import { instanceName, parseInstanceName, parseTopicPartition, topicPartition } from "../../../src/names";
import type { TopicCatalog } from "../../../src/log/topics";
import type { ApiEnv } from "../context";
import { decodeCursor, encodeCursor } from "../cursor";
import { clusterSnapshot, remainingToRestore, type ClusterSnapshot } from "../status/snapshot";
import { ageMs } from "../../../src/task/input-lag";
import { hubFamilies } from "../hub-metrics";
import { subscriptionFamilies } from "../subscription-metrics";
import { invalidInput } from "../validation";
import { DEFAULT_PAGE, limitParam, MAX_PAGE } from "../views";
import { sinkFamilies, sinkStatuses } from "./sinks";
import { exposition, family, type Family } from "../prometheus";

export const PROMETHEUS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8";

export function metricFamilies(snapshot: ClusterSnapshot): Family[] {
  const up = family("task_up", "gauge", "1 when the task instance answered this scrape, 0 when it did not.");
  const info = family("task_info", "gauge", "The task instance's state, as a label (FAILED while an active instance is stopped; value always 1).");
  const epoch = family("task_epoch", "gauge", "The coordinator epoch of the instance's assignment.");
  const incarnation = family("task_incarnation", "gauge", "The instance's incarnation: bumped by every wipe.");
  const processed = family(
    "task_processed_records_total",
    "counter",
    "Input records processed and committed: a durable total, kept across restarts and wipes of the instance.",
  );
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
  const lagSeconds = family(
    "task_lag_seconds",
    "gauge",
    "Active: how long the oldest input record not yet processed has waited (from its timestamp), 0 when none waits.",
  );
  const skippedByOperator = family(
    "task_skipped_records_total",
    "counter",
    "Records an operator had the instance pass over (POST /admin/tasks/:id/skip), never processed.",
  );
  const resetSkipped = family(
    "task_reset_skipped_records_total",
    "counter",
    "Input records operators' input resets moved the instance past (POST /admin/reset), never processed.",
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
    "Records dropped (Kafka's dropped-records), by reason: deserialization (skipped or dead-lettered by the handler), invalid (a null key where one is needed), late (too late for their window).",
  );
  const processingErrors = family(
    "task_processing_errors_total",
    "counter",
    "Processing errors handled by the topology's handler, by outcome (continued or dead-lettered).",
  );
  const productionErrors = family(
    "task_production_errors_total",
    "counter",
    "Output records that could not be produced (or that the log refused when sent), handled by the topology's handler, by outcome.",
  );
  const punctuations = family("task_punctuations_total", "counter", "Punctuator calls (stream-time and wall-clock) in committed work.");
  const uncaught = family(
    "task_uncaught_errors_total",
    "counter",
    "Errors that escaped processing and rolled a commit back, by the uncaught-error policy applied.",
  );
  const failed = family("task_failed", "gauge", "1 while the instance is stopped by a failure (an uncaught error, fencing, an application shutdown).");
  const shutdown = family("application_shutdown", "gauge", "1 while the application is shut down by an uncaught error (every task stopped), else 0.");
  const paused = family("restore_paused", "gauge", "1 while restoration at the placement is paused (it may still have a batch budget).");
  const appInstances = family("application_instances", "gauge", "Task instances of the application (the coordinator's assignment).");
  const appStates = family(
    "application_instances_by_state",
    "gauge",
    "Task instances by state (FAILED: an active instance stopped by a failure), as they last reported (reports are throttled: a few seconds behind).",
  );
  const appLag = family(
    "application_lag_records",
    "gauge",
    "Input records not yet processed, summed over the active task instances, failed ones included, as they last reported.",
  );
  const appStandbyLag = family(
    "application_standby_lag_records",
    "gauge",
    "Changelog records not yet applied, summed over the standby and idle task instances, as they last reported.",
  );
  const appLagSeconds = family(
    "application_lag_seconds",
    "gauge",
    "How long the oldest input record no active instance has processed yet has waited, failed instances included (0 when none waits).",
  );
  const appRestored = family("application_restore_restored_records", "gauge", "Changelog records restored so far by the active instances still restoring.");
  const appRestoreTotal = family("application_restore_total_records", "gauge", "Changelog records the active instances still restoring must reach.");
  const appFailed = family("application_failed_instances", "gauge", "Task instances stopped by a failure, as they last reported.");
  if (snapshot.first) {
    const { summary } = snapshot;
    shutdown.samples.push({ labels: {}, value: snapshot.shutdown ? 1 : 0 });
    appInstances.samples.push({ labels: {}, value: summary.instances });
    for (const [state, n] of Object.entries(summary.byState)) appStates.samples.push({ labels: { state }, value: n });
    appLag.samples.push({ labels: {}, value: summary.lag });
    appStandbyLag.samples.push({ labels: {}, value: summary.standbyLag });
    appLagSeconds.samples.push({ labels: {}, value: ageMs(summary.oldestWaiting, snapshot.at) / 1000 });
    appRestored.samples.push({ labels: {}, value: summary.restoring.restored });
    appRestoreTotal.samples.push({ labels: {}, value: summary.restoring.total });
    appFailed.samples.push({ labels: {}, value: summary.failed });
  }

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
    lagSeconds.samples.push({ labels, value: instance.lagMs / 1000 });
    skippedByOperator.samples.push({ labels, value: instance.lifecycle.skips });
    resetSkipped.samples.push({ labels, value: instance.lifecycle.resetSkipped });
    pending.samples.push({ labels, value: instance.pendingBatches });
    corruptions.samples.push({ labels, value: instance.incarnation });
    migrations.samples.push({ labels, value: instance.lifecycle.migrationsAway });
    inputResets.samples.push({ labels, value: instance.lifecycle.inputResets });
    const { events, uncaughtErrors } = counters;
    late.samples.push({ labels, value: events.lateRecordsDropped });
    dropped.samples.push(
      { labels: { ...labels, reason: "deserialization" }, value: events.skippedRecords + events.deserializationErrorsDeadLettered },
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
  for (const placement of snapshot.first ? snapshot.placements : []) {
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
      lagSeconds,
      pending,
      corruptions,
      migrations,
      inputResets,
    ],
    ...[late, dropped, processingErrors, productionErrors, punctuations, uncaught, failed, skippedByOperator, resetSkipped, paused, shutdown],
    ...[appInstances, appStates, appLag, appStandbyLag, appLagSeconds, appRestored, appRestoreTotal, appFailed],
  ];
}

/** Every partition of every topic the Worker serves, by topic and partition. */
function topicPartitions(catalog: TopicCatalog): TopicPartition[] {
  return [...catalog.all]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .flatMap(([topic, count]) => Array.from({ length: count }, (_, partition) => ({ topic, partition })));
}

/**
 * Per topic partition of `partitions`, what it keeps (after retention and compaction); with
 * `retention`, every topic's configured retention too. A partition that does not answer (or a
 * log that cannot say) is left out.
 */
/** What `Log.stats` answered for each partition of a page, in order (none when the log has no stats). */
export type PartitionStatsAnswers = readonly PromiseSettledResult<Awaited<ReturnType<NonNullable<Log["stats"]>>>>[];

export function topicFamilies(catalog: TopicCatalog, partitions: readonly TopicPartition[], stats: PartitionStatsAnswers, retention: boolean): Family[] {
  const gauge = (name: string, help: string) => family(name, "gauge", help);
  const records = gauge("topic_partition_records", "Records the partition keeps now (after retention and compaction).");
  const bytes = gauge("topic_partition_bytes", "Bytes of keys, values and headers the partition keeps now.");
  const earliest = gauge("topic_partition_earliest_offset", "The partition's earliest kept offset.");
  const latest = gauge("topic_partition_latest_offset", "The partition's end offset.");
  const retentionMs = gauge("topic_retention_ms", "The topic's retention.ms (-1: kept forever); label policy is its cleanup.policy.");
  stats.forEach((result, i) => {
    if (result.status !== "fulfilled") return;
    const labels = { topic: partitions[i]!.topic, partition: String(partitions[i]!.partition) };
    records.samples.push({ labels, value: result.value.records });
    bytes.samples.push({ labels, value: result.value.bytes });
    earliest.samples.push({ labels, value: result.value.earliest });
    latest.samples.push({ labels, value: result.value.latest });
  });
  for (const [topic] of retention ? catalog.all : []) {
    const config = catalog.config(topic);
    retentionMs.samples.push({ labels: { topic, policy: config["cleanup.policy"] }, value: config["retention.ms"] });
  }
  return [records, bytes, earliest, latest, retentionMs];
}

/**
 * Where a page of `/metrics` starts: after an instance (`<task>@<placement>`), or after a topic
 * partition (`<topic>/<partition>`) once every instance was listed.
 */
type MetricsAfter = { kind: "instance"; taskId: string; placement: string } | { kind: "partition"; topic: string; partition: number };

const metricsQuery = z
  .object({
    limit: limitParam(MAX_PAGE),
    cursor: z
      .string()
      .max(1_024, "cursor is too long")
      .transform((cursor, ctx): MetricsAfter => {
        const name = decodeCursor(cursor) ?? "";
        const partition = parseTopicPartition(name);
        if (partition) return { kind: "partition", ...partition };
        const instance = parseInstanceName(name);
        if (instance) return { kind: "instance", ...instance };
        ctx.addIssue({ code: "custom", message: "cursor is not one this route returned" });
        return z.NEVER;
      })
      .optional(),
  })
  .strict();

/**
 * `GET /metrics?limit=&cursor=`: a page of series sources — task instances first, then topic
 * partitions — `limit` of them (default and at most 500); the application's own families (its
 * summary, shutdown, restore pauses, topics' retention, sinks) on the first page. A `Link` header
 * (`rel="next"`) names the next page. A page costs one call per instance or partition on it (two for a store changelog partition, or a partition its subscription hub follows for a tail: the hub too),
 * plus one to the coordinator, and the first one per restore worker shard.
 */
export const metrics = new Hono<ApiEnv>().get("/metrics", zValidator("query", metricsQuery, invalidInput), async (c) => {
  const { limit = DEFAULT_PAGE, cursor } = c.req.valid("query");
  const host = c.var.host;
  const afterInstance = cursor?.kind === "instance" ? { taskId: cursor.taskId, placement: cursor.placement } : undefined;
  // Once past the instances, a page has none of them (the coordinator still says the total and the shutdown).
  // The application's families (from the summary and placements) are on the first page only.
  const first = cursor === undefined;
  const snapshot = await clusterSnapshot(host, { after: afterInstance, limit: cursor?.kind === "partition" ? 0 : limit, first, summary: first });
  const instancesDone = cursor?.kind === "partition" || snapshot.next === null;
  const all = topicPartitions(host.catalog);
  let start = 0;
  if (cursor?.kind === "partition") {
    const at = all.findIndex((tp) => tp.topic === cursor.topic && tp.partition === cursor.partition);
    start = at + 1;
  }
  const room = instancesDone ? limit - snapshot.instances.length : 0;
  const partitions = all.slice(start, start + Math.max(0, room));
  const log = c.get("log");
  const stats: PartitionStatsAnswers = log.stats ? await Promise.allSettled(partitions.map((tp) => log.stats!(tp))) : [];
  const topics = topicFamilies(host.catalog, partitions, stats, snapshot.first);
  // Each store changelog partition listed also has its subscription hub's series, and so has any
  // other partition whose hub is subscribed to it (a tail's: its stats say so) (../hub-metrics.ts).
  const subscribed = partitions.filter((_, i) => {
    const answer = stats[i];
    return answer?.status === "fulfilled" && answer.value.hub === true;
  });
  const hubs = await hubFamilies(host, partitions, subscribed);
  let next: string | null = null;
  if (!instancesDone) next = snapshot.next;
  else if (start + partitions.length < all.length) {
    // After the last partition listed; or, when the instances filled the page, after the last instance.
    const last = partitions[partitions.length - 1];
    const lastInstance = snapshot.instances[snapshot.instances.length - 1];
    if (last) next = encodeCursor(topicPartition(last));
    else if (lastInstance) next = encodeCursor(instanceName({ taskId: lastInstance.id, placement: lastInstance.placement }));
  }
  if (next !== null) c.header("Link", `</metrics?limit=${limit}&cursor=${next}>; rel="next"`);
  // On the first page only: this isolate's subscriptions, and the sinks' series (one call per partition of a sink's topic).
  const subscriptions = first ? subscriptionFamilies() : [];
  const sinks = first ? sinkFamilies(await sinkStatuses(host)) : [];
  return c.body(exposition([...metricFamilies(snapshot), ...topics, ...hubs, ...subscriptions, ...sinks]), 200, {
    "Content-Type": PROMETHEUS_CONTENT_TYPE,
    "Cache-Control": "no-store",
  });
});
