/**
 * Topic configurations and what partitions keep: `GET /topics` and `GET /topics/:topic` (API
 * v1.1) with Kafka's names and the defaults Kafka Streams creates topics with, settings given in
 * the `TOPICS` var, per-partition stats and metrics, a partition's maintenance alarm, and input
 * lost to retention made visible (a task resuming at the earliest offset counts it).
 */
import { env } from "cloudflare:workers";
import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { readConfig } from "../../src/config";
import type { InstanceAssignment } from "../../src/coordinator/coordinator-store";
import { COORDINATOR_NAME } from "../../src/names";
import { KAFKA_DEFAULTS } from "../../src/log/topic-config";
import type { InstanceMetrics } from "../../durable-objects/task-object";
import { TestDriver } from "../../platform/testing/test-driver";
import { application } from "../support/orders-app";
import { call, json } from "../support/api";
import { keyOn } from "../support/keys";
import { until } from "../support/until";

const driver = new TestDriver(env, application);
const DAY = 24 * 60 * 60 * 1000;

describe("GET /topics", () => {
  it("lists every topic with its partition count and configuration: Kafka's defaults by kind", async () => {
    const { topics } = await json<{ topics: { name: string; partitions: number; config: Record<string, unknown> }[] }>(await call("/topics"));
    const byName = new Map(topics.map((t) => [t.name, t]));
    expect(byName.get("orders")).toEqual({ name: "orders", partitions: 4, config: { ...KAFKA_DEFAULTS } });
    expect(byName.get("edge-streams-totals-changelog")?.config).toMatchObject({
      "cleanup.policy": "compact",
      "delete.retention.ms": DAY,
      "min.compaction.lag.ms": 0,
    });
    // Declared with the TOPICS var: without settings Kafka's defaults, with settings those.
    expect(byName.get("ingest-test")).toMatchObject({ partitions: 4, config: { "cleanup.policy": "delete", "retention.ms": 7 * DAY } });
    expect(byName.get("retention-test")).toMatchObject({
      partitions: 1,
      config: { "cleanup.policy": "compact,delete", "retention.ms": 60_000, "retention.bytes": 1_000_000 },
    });
    expect(topics.map((t) => t.name)).toEqual([...topics.map((t) => t.name)].sort());
  });

  it("GET /topics/:topic shows what each partition keeps; an unknown topic is 404", async () => {
    const key = keyOn(2, "topic-stats");
    await driver.pipe(
      "orders",
      [1, 2, 3].map((amount) => ({ key, value: { amount } })),
    );
    await driver.runUntilQuiet();
    const body = await json<{ name: string; partitions: { partition: number; earliest: number; latest: number; records: number; bytes: number }[] }>(
      await call("/topics/edge-streams-totals-changelog"),
    );
    expect(body.name).toBe("edge-streams-totals-changelog");
    expect(body.partitions.map((p) => p.partition)).toEqual([0, 1, 2, 3]);
    const p2 = body.partitions[2]!;
    expect(p2.latest - p2.earliest).toBeGreaterThanOrEqual(3);
    expect(p2.records).toBe(p2.latest - p2.earliest);
    expect(p2.bytes).toBeGreaterThan(0);
    const missing = await call("/topics/nope");
    expect(missing.status).toBe(404);
    expect(await missing.json()).toMatchObject({ error: "unknown_topic" });
  });

  it("/metrics has per-partition records and bytes and every topic's retention", async () => {
    const text = await (await call("/metrics")).text();
    expect(text).toMatch(/edge_streams_topic_partition_records\{topic="orders",partition="0"\} \d+/);
    expect(text).toMatch(/edge_streams_topic_retention_ms\{topic="edge-streams-totals-changelog",policy="compact"\} 604800000/);
  });

  it("an append arms the partition's alarm for its retention check and compaction", async () => {
    expect((await call("/topics/retention-test/records", { body: { records: [{ key: "k", value: "v" }] } })).status).toBe(200);
    // The first retention check runs at once (none ran before); it arms the next maintenance: the
    // quiet partition's compaction, then the next retention check.
    const alarm = () => runInDurableObject(env.LOG_PARTITION.getByName("retention-test/0"), (_o, state) => state.storage.getAlarm());
    await until(async () => ((await alarm()) ?? 0) > Date.now(), 10_000, "the next maintenance to be armed");
  });
});

describe("the TOPICS var", () => {
  it("takes name=partitions with Kafka settings in parentheses, and names what is wrong", () => {
    const config = readConfig({ TOPICS: "a=2, b=3(retention.ms=1000 cleanup.policy=delete,compact), c=1(purge.on.commit=true)" });
    expect(config.TOPICS.a).toEqual({ partitions: 2, config: KAFKA_DEFAULTS });
    expect(config.TOPICS.b!.config).toMatchObject({ "retention.ms": 1000, "cleanup.policy": "compact,delete" });
    expect(config.TOPICS.c!.config["purge.on.commit"]).toBe(true);
    expect(() => readConfig({ TOPICS: "a=2(retention.ms=soon)" })).toThrow(/topic a: retention.ms is -1 or a non-negative integer/);
    expect(() => readConfig({ TOPICS: "a=2(segment.ms=5)" })).toThrow(/unknown topic setting "segment.ms"/);
    expect(() => readConfig({ TOPICS: "a=2(cleanup.policy=forever)" })).toThrow(/cleanup.policy is delete, compact or compact,delete/);
  });
});

describe("input lost to retention", () => {
  it("a task whose input was deleted below its position resumes at the earliest offset, and says so in its history and /metrics", async () => {
    const key = keyOn(3, "retention-lost");
    await driver.pipe("orders", [{ key, value: { amount: 1 } }]);
    await driver.runUntilQuiet();
    const active = ((await env.COORDINATOR.getByName(COORDINATOR_NAME).assignments()) as InstanceAssignment[]).find(
      (i) => i.taskId === "0_3" && i.role === "active",
    )!;
    // Two more orders arrive and are deleted (retention) before the task reads them: it is held
    // (stopped) meanwhile, so it cannot read them first.
    await driver.task(active).halt("held by the test");
    const orders = { topic: "orders", partition: 3 };
    await driver.log.append(
      orders,
      [2, 3].map((amount) => ({ key, value: JSON.stringify({ amount }) })),
    );
    await driver.log.deleteRecordsBefore(orders, (await driver.log.offsets(orders)).latest);
    await driver.log.append(orders, [{ key, value: JSON.stringify({ amount: 4 }) }]);
    await driver.task(active).resume();
    await driver.runUntilQuiet();
    expect(await driver.get("totals", key)).toMatchObject({ count: 2, sum: 5 });
    const metrics = (await driver.task(active).metrics()) as InstanceMetrics;
    expect(metrics.lifecycle.inputResets).toBeGreaterThanOrEqual(1);
    expect(metrics.lifecycle.recent.some((e) => e.event === "input-reset")).toBe(true);
    expect(await (await call("/metrics")).text()).toMatch(
      new RegExp(`edge_streams_task_input_resets_total\\{task="0_3",placement="${active.placement}",role="active"\\} [1-9]`),
    );
  });
});
