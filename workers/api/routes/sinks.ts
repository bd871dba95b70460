/**
 * `GET /sinks` (docs/http-api.md): every sink of the application (docs/connectors.md#sinks) with
 * its kind, topic, target (a binding's name, a URL without its query) and dead-letter topic, its
 * totals, and per partition its position, the partition's end, the lag between them, records
 * delivered, dead-lettered, dropped and skipped, failures (all and in a row), the last error and
 * when the next attempt is due. One call per partition of a sink's topic (each answers for every
 * sink of its topic). `sinkFamilies` turns the same into `/metrics`' series.
 */
import { Hono } from "hono";
import type { SinkPartitionStatus } from "../../../src/connectors/sink-delivery";
import { isQueueSink } from "../../../src/connectors/sink-config";
import { unwrap } from "../../../src/log/errors";
import type { Host } from "../../../platform/host";
import type { ApiEnv } from "../context";
import { family, type Family } from "../prometheus";

/** Every sink's partitions, as their log partitions say (in sink name, then partition order). */
export async function sinkStatuses(host: Host): Promise<SinkPartitionStatus[]> {
  const topics = [...new Set(Object.values(host.application.sinks).map((sink) => sink.topic))];
  const tps = topics.flatMap((topic) => Array.from({ length: host.catalog.partitions(topic) }, (_, partition) => ({ topic, partition })));
  const answers = await Promise.all(tps.map(async (tp) => unwrap(await host.partition(tp).sinkStatus(tp))));
  return answers.flat().sort((a, b) => (a.sink < b.sink ? -1 : a.sink > b.sink ? 1 : a.partition - b.partition));
}

const sum = (list: readonly SinkPartitionStatus[], field: "lag" | "delivered" | "failures" | "deadLettered" | "dropped" | "skipped") =>
  list.reduce((total, status) => total + status[field], 0);

export const sinks = new Hono<ApiEnv>().get("/sinks", async (c) => {
  const host = c.var.host;
  const statuses = await sinkStatuses(host);
  const list = Object.entries(host.application.sinks)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([name, definition]) => {
      const partitions = statuses.filter((status) => status.sink === name);
      return {
        name,
        kind: isQueueSink(definition) ? "queue" : "webhook",
        topic: definition.topic,
        target: partitions[0]?.target ?? null,
        deadLetterTopic: definition.deadLetterTopic ?? host.application.topology.errorHandlers.deadLetterQueueTopic ?? null,
        lag: sum(partitions, "lag"),
        delivered: sum(partitions, "delivered"),
        failures: sum(partitions, "failures"),
        deadLettered: sum(partitions, "deadLettered"),
        dropped: sum(partitions, "dropped"),
        skipped: sum(partitions, "skipped"),
        failing: partitions.filter((p) => p.consecutiveFailures > 0).map((p) => p.partition),
        partitions: partitions.map(({ sink: _sink, kind: _kind, target: _target, topic: _topic, ...partition }) => partition),
      };
    });
  return c.json({ sinks: list });
});

/** `/metrics`' series of the sinks, labelled `sink`, `topic` and `partition`. */
export function sinkFamilies(statuses: readonly SinkPartitionStatus[]): Family[] {
  const sinkFamily = (name: string, type: Family["type"], help: string, value: (s: SinkPartitionStatus) => number) =>
    family(
      `sink_${name}`,
      type,
      help,
      statuses.map((s) => ({ labels: { sink: s.sink, topic: s.topic, partition: String(s.partition) }, value: value(s) })),
    );
  return [
    sinkFamily("lag_records", "gauge", "Records of the partition the sink has not delivered yet (end offset - its committed position).", (s) => s.lag),
    sinkFamily("delivered_records_total", "counter", "Records delivered (a redelivery after a crash counts again).", (s) => s.delivered),
    sinkFamily("failures_total", "counter", "Failed deliveries (every attempt).", (s) => s.failures),
    sinkFamily(
      "consecutive_failures",
      "gauge",
      "Failed deliveries in a row (0 when the last one succeeded): the back-off's exponent.",
      (s) => s.consecutiveFailures,
    ),
    sinkFamily("dead_lettered_records_total", "counter", "Records the sink could not deliver, sent to the dead-letter topic.", (s) => s.deadLettered),
    sinkFamily("dropped_records_total", "counter", "Records the sink could not deliver and no dead-letter topic took.", (s) => s.dropped),
    sinkFamily("skipped_records_total", "counter", "Records retention removed before the sink delivered them.", (s) => s.skipped),
  ].filter((f) => f.samples.length > 0);
}
