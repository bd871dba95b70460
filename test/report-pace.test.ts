/**
 * What an instance tells its restore worker of itself (issue #33): only what the summary shows.
 * At 256 partitions each task is behind for the milliseconds it takes to process an arrival, and
 * its changelog's checkpoint and end move with every commit; a report went for that at most every
 * REPORT_INTERVAL_MS per instance — 0.07–0.15 requests per order in the bench's `scale` scenario.
 */
import { env } from "cloudflare:workers";
import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { COORDINATOR_NAME, instanceName, topicPartition } from "../src/names";
import { REPORT_INTERVAL_MS, type InstanceReport } from "../src/summary/summary";
import { TestDriver } from "../platform/testing/test-driver";
import { activeInstance } from "./support/active";
import { keyOn } from "./support/keys";
import { application } from "./support/orders-app";
import { until } from "./support/until";

const driver = new TestDriver(env, application);

interface Inside {
  reports: { last: { report: InstanceReport; at: number } | undefined };
  serial: { run<T>(operation: () => T): Promise<T> };
  task: { storage: { positions(): Record<string, number> } };
}

describe("an instance's reports", { timeout: 60_000 }, () => {
  it("tell nothing of an arrival processed at once, though the last report is REPORT_INTERVAL_MS old and the changelog moved", async () => {
    await driver.instances();
    await driver.runUntilQuiet();
    const active = await activeInstance(env.COORDINATOR.getByName(COORDINATOR_NAME).assignments(), "0_1");
    const task = env.TASK_OBJECT.getByName(instanceName(active));
    const input = { topic: "orders", partition: 1 };
    const inside = <T>(read: (object: Inside) => T) => runInDurableObject(task, (object) => read(object as unknown as Inside));
    const arrive = async (name: string) => {
      await driver.log.append(input, [{ key: keyOn(1, name), value: JSON.stringify({ amount: 1 }) }]);
      const end = (await driver.log.offsets(input)).latest;
      // Processed and committed, then the run over (whatever it queued behind it done): its report made, if any.
      await until(() => inside((o) => o.task.storage.positions()[topicPartition(input)] === end), 20_000, `the order ${name} processed`);
      await runInDurableObject(task, (object) => (object as unknown as Inside).serial.run(() => undefined));
    };

    await arrive("first");
    await until(() => inside((o) => o.reports.last?.report.lag === 0), 20_000, "a report saying caught up");
    // The last report as if it were REPORT_INTERVAL_MS old: progress alone would be due now.
    const before = await inside((o) => {
      const last = o.reports.last!;
      o.reports.last = { ...last, at: last.at - REPORT_INTERVAL_MS - 1 };
      return { seq: last.report.seq, restored: last.report.restored };
    });
    await arrive("second");
    const after = await inside((o) => o.reports.last!.report);
    expect(after.seq).toBe(before.seq);
    expect(after.restored).toBe(before.restored);
    expect(await driver.get("totals", keyOn(1, "second"))).toEqual({ count: 1, sum: 1 });
  });
});
