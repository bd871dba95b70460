/**
 * The bench's cost arithmetic (bench/lib/usage.mjs, bench/lib/prices.mjs): how the counting app's
 * per-object counts become categories, per-record keys, dollars, billed storage and idle wake-ups.
 */
import { describe, expect, it } from "vitest";
// @ts-expect-error: plain JavaScript modules of the bench, without types.
import { PRICES, costPerMillionUsd, storedUsdPerMillionPerMonth } from "../../bench/lib/prices.mjs";
// @ts-expect-error: plain JavaScript modules of the bench, without types.
import { categorize, delta, lessPolls, perRecordKeys, standbyNames, storageKeys, tally, wakeupKeys } from "../../bench/lib/usage.mjs";

type Usage = {
  rowsRead: number;
  rowsWritten: number;
  written: Record<string, number>;
  requests: number;
  alarms: number;
  bytes: number;
  freshBytes: number | null;
};

function usage(partial: Partial<Usage>): Usage {
  return { rowsRead: 0, rowsWritten: 0, written: {}, requests: 0, alarms: 0, bytes: 0, freshBytes: null, ...partial };
}

describe("the bench's cost arithmetic", () => {
  it("prices per million records are the per-record counts times the per-million prices", () => {
    expect(PRICES.rowsWrittenPerMillionUsd).toBe(1);
    expect(PRICES.requestsPerMillionUsd).toBe(0.15);
    expect(costPerMillionUsd({ rowsWritten: 2, rowsRead: 10, requests: 0.5 })).toBeCloseTo(2 + 0.01 + 0.075, 10);
    // 500 bytes per record: 0.5 GB per million records, at $0.20 per GB-month.
    expect(storedUsdPerMillionPerMonth(500)).toBeCloseTo(0.1, 10);
  });

  it("puts objects in categories by topic and by the role GET /tasks gives a task instance", () => {
    const standbys = standbyNames([
      { id: "0_0", placement: "a", role: "active" },
      { id: "0_0", placement: "b", role: "standby" },
    ]);
    const categoryOf = categorize(standbys);
    expect(categoryOf("partition:orders/3")).toBe("input");
    expect(categoryOf("partition:totals/0")).toBe("output");
    expect(categoryOf("partition:edge-streams-totals-changelog/12")).toBe("changelog");
    expect(categoryOf("partition:orders-dead-letters/0")).toBe("topic");
    expect(categoryOf("task:0_0@a")).toBe("task");
    expect(categoryOf("task:0_0@b")).toBe("standby");
    expect(categoryOf("restore:restore@a")).toBe("restore");
    expect(categoryOf("coordinator:coordinator")).toBe("coordinator");
  });

  it("turns two moments' counts, less the bench's polls, into per-record keys by category and table", () => {
    const categoryOf = categorize(new Set(["0_0@b"]));
    const before = {
      "task:0_0@a": usage({ rowsWritten: 10, written: { kv: 10 }, requests: 1 }),
      "partition:orders/0": usage({ rowsWritten: 4, written: { record_batches: 2, partition_meta: 2 }, requests: 2 }),
    };
    const after = {
      "task:0_0@a": usage({ rowsWritten: 1_010, written: { kv: 1_010 }, requests: 11, alarms: 2, rowsRead: 400 }),
      "task:0_0@b": usage({ rowsWritten: 1_001, written: { kv: 1_000, _schema: 1 } }),
      "partition:orders/0": usage({ rowsWritten: 24, written: { record_batches: 12, partition_meta: 12 }, requests: 42 }),
    };
    const spent = delta(tally(after, categoryOf), tally(before, categoryOf));
    expect(spent.rowsWritten).toBe(2_021);
    expect(spent["written:standby:kv"]).toBe(1_000);
    expect(spent["requests:task"]).toBe(12); // 10 calls and 2 alarms
    expect(spent["calls:task"]).toBe(10);

    // Two polls, each of 5 requests to the partition and 100 rows read at the task.
    const net = lessPolls(spent, 2, { requests: 5, "requests:input": 5, rowsRead: 100 });
    const keys = perRecordKeys("x_", net, 1_000);
    expect(keys.x_rows_written_per_record).toBe(2.02);
    expect(keys.x_rows_read_per_record).toBe(0.2);
    expect(keys.x_do_requests_per_record).toBe(0.042); // (12 + 40 - 10) / 1000
    expect(keys.x_do_requests_per_record_input).toBe(0.03);
    expect(keys.x_rows_written_per_record_task_kv).toBe(1);
    expect(keys.x_rows_written_per_record_standby_schema).toBe(0.001);
    expect(keys.x_rows_written_per_record_input_record_batches).toBe(0.01);
    expect(keys.x_rows_written_per_record_coordinator).toBe(0); // every category is printed
    expect("x_rows_written_per_record_coordinator_instances" in keys).toBe(false); // a table only when written
    expect(keys.x_cost_per_million_usd).toBeCloseTo(2.021 * 1 + 0.2 * 0.001 + 0.042 * 0.15, 2);
  });

  it("measures storage as the database sizes: a new object of each kind, and the growth per record", () => {
    const before = { "task:0_0@a": usage({ bytes: 50_000, freshBytes: 49_152 }), "partition:orders/0": usage({ bytes: 60_000, freshBytes: 57_344 }) };
    const after = {
      "task:0_0@a": usage({ bytes: 150_000, freshBytes: 49_152 }),
      "task:0_1@a": usage({ bytes: 70_000, freshBytes: 53_248 }),
      "partition:orders/0": usage({ bytes: 160_000, freshBytes: 57_344 }),
    };
    const keys = storageKeys("", { before, after, records: 1_000, orderBytes: 49.84 });
    expect(keys.stored_bytes_per_object_empty_task).toBe(49_152);
    expect(keys.stored_bytes_per_object_empty_partition).toBe(57_344);
    expect(keys.stored_bytes_per_object_empty).toBe(57_344);
    expect("stored_bytes_per_object_empty_coordinator" in keys).toBe(false);
    expect(keys.stored_bytes_per_record_marginal).toBe(270); // (380,000 - 110,000) / 1,000
    expect(keys.order_serialized_bytes).toBe(49.8);
  });

  it("counts idle wake-ups per minute by object kind", () => {
    const before = { "task:0_0@a": usage({ requests: 3 }), "partition:orders/0": usage({ alarms: 1 }) };
    const after = { "task:0_0@a": usage({ requests: 5 }), "partition:orders/0": usage({ alarms: 5 }), "restore:restore@a": usage({ requests: 2 }) };
    const keys = wakeupKeys("idle", after, before, 120_000);
    expect(keys).toEqual({ idle: 4, idle_task: 1, idle_partition: 2, idle_coordinator: 0, idle_restore: 1, idle_group: 0 });
  });
});
