/**
 * `GET /metrics` (Prometheus text format) and the structured lifecycle logs: records processed
 * and restored are counted in records, restoration's remaining records and corruptions follow a
 * wipe, migrations are counted where the active instance left.
 */
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import { RateMeter } from "../src/task/task-metrics";
import { logEvent, logLine, overrideLogLevel } from "../src/util/logging";
import { TestDriver } from "../platform/testing/test-driver";
import { application } from "./support/orders-app";
import { exposition } from "../workers/api/prometheus";
import { call } from "./support/api";
import { keysOn } from "./support/keys";
import { activeInstance } from "./support/active";

const driver = new TestDriver(env, application);

type Sample = { name: string; labels: Record<string, string>; value: number };

/** Parses the text format strictly enough to catch malformed lines. */
function parse(text: string): { samples: Sample[]; types: Map<string, string> } {
  const samples: Sample[] = [];
  const types = new Map<string, string>();
  for (const line of text.split("\n")) {
    if (line === "") continue;
    const type = /^# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) (counter|gauge|summary|histogram|untyped)$/.exec(line);
    if (type) {
      types.set(type[1]!, type[2]!);
      continue;
    }
    if (/^# HELP [a-zA-Z_:][a-zA-Z0-9_:]* .+$/.test(line)) continue;
    const sample = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{((?:[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\.)*",?)*)\})? (-?[0-9.e+-]+|NaN|[+-]Inf)$/.exec(line);
    expect(sample, `malformed line: ${line}`).not.toBeNull();
    const labels: Record<string, string> = {};
    for (const m of (sample![2] ?? "").matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[m[1]!] = m[2]!;
    samples.push({ name: sample![1]!, labels, value: Number(sample![3]) });
  }
  return { samples, types };
}

async function scrape() {
  const response = await call("/metrics");
  expect(response.status).toBe(200);
  expect(response.headers.get("Content-Type")).toMatch(/^text\/plain; version=0\.0\.4/);
  const parsed = parse(await response.text());
  const value = (name: string, labels: Record<string, string>) =>
    parsed.samples.find((s) => s.name === `edge_streams_${name}` && Object.entries(labels).every(([k, v]) => s.labels[k] === v))?.value;
  return { ...parsed, value };
}

/** Captures structured log lines written while `fn` runs. */
async function logsDuring(fn: () => Promise<void>): Promise<Record<string, unknown>[]> {
  const lines: Record<string, unknown>[] = [];
  // This file checks what is logged: every level, whatever LOG_LEVEL says.
  overrideLogLevel("debug");
  for (const method of ["log", "warn", "error"] as const) {
    vi.spyOn(console, method).mockImplementation((text: unknown) => {
      if (typeof text === "string" && text.startsWith("{")) lines.push(JSON.parse(text));
    });
  }
  try {
    await fn();
  } finally {
    vi.restoreAllMocks();
    overrideLogLevel(undefined);
  }
  return lines;
}

afterEach(() => vi.restoreAllMocks());

describe("GET /metrics", () => {
  it("is the Prometheus text format, with every family typed and every instance labelled", async () => {
    await driver.instances();
    const { samples, types, value } = await scrape();
    for (const s of samples) {
      const family = s.name.replace(/_(sum|count)$/, "");
      expect(types.has(s.name) || types.get(family) === "summary", s.name).toBe(true);
    }
    for (let p = 0; p < 4; p++) {
      const labels = { task: `0_${p}`, role: "active" };
      expect(value("task_up", labels)).toBe(1);
      expect(samples.find((s) => s.name === "edge_streams_task_info" && s.labels.task === `0_${p}`)?.labels.state).toBeDefined();
      for (const name of [
        "task_processed_records_total",
        "task_restored_records_total",
        "task_standby_records_total",
        "task_lag_records",
        "task_restore_remaining_records",
        "task_corruptions_total",
        "task_migrations_total",
      ]) {
        expect(value(name, labels), `${name} 0_${p}`).toBeTypeOf("number");
      }
    }
    expect(value("restore_paused", { placement: "a" })).toBe(0);
  });

  it("counts processed records and commit latency per instance", async () => {
    const active = await activeInstance(driver.instances(), 2);
    const labels = { task: "0_2", placement: active.placement, role: "active" };
    const before = await scrape();
    const keys = keysOn(2, 30, "metrics-processed");
    await driver.pipe(
      "orders",
      keys.map((key) => ({ key, value: { amount: 1 } })),
    );
    await driver.runUntilQuiet();
    const after = await scrape();
    expect(after.value("task_processed_records_total", labels)! - before.value("task_processed_records_total", labels)!).toBe(30);
    expect(after.value("task_processed_records_per_second", labels)).toBeGreaterThan(0);
    expect(after.value("task_commit_latency_seconds_count", labels)).toBeGreaterThan(before.value("task_commit_latency_seconds_count", labels)!);
    expect(after.value("task_commit_latency_seconds_sum", labels)).toBeGreaterThanOrEqual(0);
    expect(after.value("task_commit_latency_last_seconds", labels)).toBeGreaterThanOrEqual(0);
    expect(after.value("task_lag_records", labels)).toBe(0);
  });

  it("follows a wipe: corruptions, records remaining, records restored (records, not batches)", async () => {
    const keys = keysOn(1, 60, "metrics-restore");
    await driver.pipe(
      "orders",
      keys.map((key) => ({ key, value: { amount: 1 } })),
    );
    await driver.runUntilQuiet();
    const active = await activeInstance(driver.instances(), 1);
    const labels = { task: "0_1", placement: active.placement, role: "active" };
    const before = await scrape();
    const end = (await driver.task(active).describe()).changelogs[0]!.end;
    expect(end).toBeGreaterThanOrEqual(60);

    await call("/admin/restore/pause", { method: "POST" });
    try {
      await driver.task(active).corrupt();
      const wiped = await scrape();
      expect(wiped.value("task_corruptions_total", labels)).toBe(before.value("task_corruptions_total", labels)! + 1);
      expect(wiped.value("task_restore_remaining_records", labels)).toBe(end);
      expect(wiped.value("restore_paused", { placement: active.placement })).toBe(1);
      expect(wiped.samples.find((s) => s.name === "edge_streams_task_info" && s.labels.task === "0_1")?.labels.state).toBe("RESTORING");

      // One window: two batches of 25 records read and compacted (RESTORE_BATCH_RECORDS=25 and
      // RESTORE_READ_AHEAD=1 in tests); counted in records of the changelog, compacted away or not.
      await call("/admin/restore/resume", { body: { maxBatches: 1 } });
      for (let round = 0; round < 10; round++) await driver.restoreRound();
      const partly = await scrape();
      expect(partly.value("task_restored_records_total", labels)! - before.value("task_restored_records_total", labels)!).toBe(50);
      expect(partly.value("task_restore_remaining_records", labels)).toBe(end - 50);
      expect(partly.value("task_restore_records_per_second", labels)).toBeGreaterThan(0);
    } finally {
      await call("/admin/restore/resume", { body: {} });
    }
    await driver.runUntilQuiet();
    const done = await scrape();
    expect(done.value("task_restored_records_total", labels)! - before.value("task_restored_records_total", labels)!).toBe(end);
    expect(done.value("task_restore_remaining_records", labels)).toBe(0);
  });

  it("counts a migration at the placement the active instance left", async () => {
    const from = await activeInstance(driver.instances(), 3);
    const to = from.placement === "a" ? "b" : "a";
    const before = await scrape();
    const left = { task: "0_3", placement: from.placement };
    const lines = await logsDuring(async () => {
      const response = await call("/admin/tasks/0_3/migrate", { body: { to } });
      expect(response.status).toBe(200);
    });
    const after = await scrape();
    expect(after.value("task_migrations_total", left)).toBe((before.value("task_migrations_total", left) ?? 0) + 1);
    expect(after.value("task_up", { task: "0_3", placement: to, role: "active" })).toBe(1);
    expect(after.value("task_up", { ...left, role: "idle" })).toBe(1);

    const moved = lines.find((l) => l.event === "task.migrated-away");
    expect(moved).toMatchObject({ level: "info", task: "0_3", placement: from.placement, role: "idle", state: "SUSPENDED" });
    expect(moved!.epoch).toBeTypeOf("number");
    expect(moved!.incarnation).toBeTypeOf("number");
    expect(lines.find((l) => l.event === "task.assign" && l.placement === to)).toMatchObject({ task: "0_3", role: "active" });
  });
});

describe("structured lifecycle logs", () => {
  it("log a wipe and the turn to RUNNING with task, placement, epoch and incarnation", async () => {
    const active = await activeInstance(driver.instances(), 0);
    const before = await driver.task(active).describe();
    const lines = await logsDuring(async () => {
      await call("/admin/tasks/0_0/corrupt", { method: "POST" });
      await driver.runUntilQuiet();
    });
    const wipe = lines.find((l) => l.event === "task.wipe");
    expect(wipe).toMatchObject({
      level: "warn",
      task: "0_0",
      placement: active.placement,
      epoch: before.epoch,
      incarnation: before.incarnation + 1,
      state: "RESTORING",
    });
    expect(typeof wipe!.time).toBe("string");
    expect(lines.find((l) => l.event === "task.running")).toMatchObject({ task: "0_0", placement: active.placement, incarnation: before.incarnation + 1 });
  });

  it("redact fields that name a secret", () => {
    expect(logLine("info", "x", { apiToken: "s3cret", password: "p", Authorization: "Bearer t", task: "0_0" })).toMatchObject({
      apiToken: "[redacted]",
      password: "[redacted]",
      Authorization: "[redacted]",
      task: "0_0",
    });
  });

  it("are written from LOG_LEVEL up (warn here: info lines are not)", () => {
    const written: string[] = [];
    for (const method of ["log", "warn", "error"] as const) vi.spyOn(console, method).mockImplementation((text: unknown) => void written.push(String(text)));
    logEvent("test.info", {}, "info");
    logEvent("test.warn", {}, "warn");
    logEvent("test.error", {}, "error");
    vi.restoreAllMocks();
    expect(written.map((line) => JSON.parse(line).event)).toEqual(["test.warn", "test.error"]);
  });
});

describe("metric helpers", () => {
  it("escape label values", () => {
    const text = exposition([{ name: "x", type: "gauge", help: "h", samples: [{ labels: { l: 'a"b\\c\nd' }, value: 1.5 }] }]);
    expect(text).toBe('# HELP x h\n# TYPE x gauge\nx{l="a\\"b\\\\c\\nd"} 1.5\n');
  });

  it("average a rate over the window, then forget", () => {
    let now = 100_000;
    const meter = new RateMeter(() => now, 10_000);
    now += 10_000;
    meter.add(50);
    now += 1_000;
    meter.add(50);
    expect(meter.total).toBe(100);
    expect(meter.rate()).toBe(10);
    now += 20_000;
    expect(meter.rate()).toBe(0);
    expect(meter.total).toBe(100);
  });
});
