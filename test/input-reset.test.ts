/**
 * The application's input offset reset (`POST /admin/reset`, Kafka's
 * `kafka-streams-application-reset`) on the example app, exactly once: forward to the latest
 * offsets, to an offset per partition and to a timestamp, the records skipped never processed
 * (not in the store, the changelog or the output) and the ones after processed once; backward
 * (earliest, an offset before what was committed) refused with 409 before anything moves; a
 * coordinator that dies right after storing the reset finishes it on its own. Orders wait
 * unprocessed while the application is shut down (deterministic: nothing processes them then).
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { InstanceAssignment } from "../src/coordinator/coordinator-store";
import { COORDINATOR_NAME } from "../src/names";
import type { TaskDescription } from "../src/task/describe";
import { TestDriver } from "../platform/testing/test-driver";
import { call, json } from "./support/api";
import { keysOn } from "./support/keys";
import { application } from "./support/orders-app";
import { until } from "./support/until";
import { activeInstance } from "./support/active";

const driver = new TestDriver(env, application);
const coordinator = () => env.COORDINATOR.getByName(COORDINATOR_NAME);
const CHANGELOG = "edge-streams-totals-changelog";

interface Totals {
  count: number;
  sum: number;
}

async function append(partition: number, orders: readonly { key: string; amount: number; timestamp?: number }[]): Promise<number> {
  const result = await driver.log.append(
    { topic: "orders", partition },
    orders.map(({ key, amount, timestamp }) => ({ key, value: JSON.stringify({ amount }), ...(timestamp === undefined ? {} : { timestamp }) })),
  );
  return result.baseOffset;
}

async function total(key: string): Promise<Totals | undefined> {
  return driver.get<string, Totals>("totals", key);
}

/** Every active halted (as an application shutdown does): input waits unprocessed. */
async function halt(): Promise<void> {
  await coordinator().shutdownApplication({ taskId: "0_0", placement: "a", reason: "holding input for a reset test" });
  await until(
    async () => {
      const actives = ((await coordinator().assignments()) as InstanceAssignment[]).filter((i) => i.role === "active");
      const described = (await Promise.all(actives.map((a) => driver.task(a).describe()))) as TaskDescription[];
      return described.every((d) => d.state === "FAILED");
    },
    10_000,
    "every active to halt",
  );
}

async function resume(): Promise<void> {
  expect((await call("/admin/application/resume", { method: "POST" })).status).toBe(200);
}

async function reset(body: unknown): Promise<Response> {
  return call("/admin/reset", { body });
}

/** What the changelog and the output hold for `keys`. */
async function history(keys: readonly string[]): Promise<{ changelog: Totals[]; output: Totals[] }> {
  const of = async (topic: string) => (await driver.read(topic)).filter((r) => keys.includes(r.key!)).map((r) => JSON.parse(r.value) as Totals);
  return { changelog: await of(CHANGELOG), output: await of("totals") };
}

describe("an input reset", { timeout: 60_000 }, () => {
  it("to the latest offsets skips every record waiting (never processed), keeps the stores, and processes what comes after once", async () => {
    const [key] = keysOn(1, 1, "reset-latest");
    await append(1, [{ key: key!, amount: 5 }]);
    await driver.runUntilQuiet();
    expect(await total(key!)).toEqual({ count: 1, sum: 5 });
    await halt();
    const base = await append(1, [
      { key: key!, amount: 100 },
      { key: key!, amount: 200 },
      { key: key!, amount: 300 },
    ]);
    const response = await reset({ to: "latest" });
    expect(response.status).toBe(200);
    const { reset: done } = await json(response);
    expect(done).toMatchObject({ to: "latest", topics: ["orders"], pending: 0, skipped: 3 });
    expect(done.finishedAt).not.toBeNull();
    expect(done.partitions).toContainEqual({ topic: "orders", partition: 1, from: base, to: base + 3, skipped: 3 });
    expect(done.partitions).toHaveLength(4);
    expect((await json(await call("/admin/reset"))).reset.id).toBe(done.id);

    await resume();
    await append(1, [{ key: key!, amount: 7 }]);
    await driver.runUntilQuiet();
    expect(await total(key!)).toEqual({ count: 2, sum: 12 });
    expect(await history([key!])).toEqual({
      changelog: [
        { count: 1, sum: 5 },
        { count: 2, sum: 12 },
      ],
      output: [
        { count: 1, sum: 5 },
        { count: 2, sum: 12 },
      ],
    });
    const task = (await driver.task(await activeInstance(coordinator().assignments(), "0_1")).describe()) as TaskDescription;
    expect(task).toMatchObject({ state: "RUNNING", lag: 0 });
    // Counted, and in the task's history.
    const metrics = await (await call("/metrics")).text();
    expect(metrics).toMatch(/^edge_streams_task_reset_skipped_records_total\{task="0_1",placement="[^"]+",role="active"\} 3$/m);
    expect(await (await call("/")).text()).toContain("input reset by an operator");
  });

  it("to an offset per partition and to a timestamp skips only the records before them", async () => {
    const [key] = keysOn(2, 1, "reset-offsets");
    await halt();
    const base = await append(2, [
      { key: key!, amount: 1, timestamp: 1_000 },
      { key: key!, amount: 2, timestamp: 2_000 },
      { key: key!, amount: 4, timestamp: 3_000 },
      { key: key!, amount: 8, timestamp: 4_000 },
    ]);
    const byOffset = await reset({ to: "offsets", offsets: [{ topic: "orders", partition: 2, offset: base + 1 }] });
    expect(byOffset.status).toBe(200);
    expect((await json(byOffset)).reset).toMatchObject({ skipped: 1, partitions: [{ topic: "orders", partition: 2, from: base, to: base + 1, skipped: 1 }] });
    // A timestamp between the third and the fourth record's: the next two go too.
    const byTime = await reset({ to: "timestamp", timestamp: 3_500 });
    expect(byTime.status).toBe(200);
    expect((await json(byTime)).reset.partitions).toContainEqual({ topic: "orders", partition: 2, from: base + 1, to: base + 3, skipped: 2 });
    await resume();
    await driver.runUntilQuiet();
    expect(await total(key!)).toEqual({ count: 1, sum: 8 });
    expect(await history([key!])).toEqual({ changelog: [{ count: 1, sum: 8 }], output: [{ count: 1, sum: 8 }] });
  });

  it("backward is refused with 409 before anything moves: earliest, or an offset before what the application committed", async () => {
    const [key] = keysOn(3, 1, "reset-backward");
    await append(3, [
      { key: key!, amount: 1 },
      { key: key!, amount: 2 },
    ]);
    await driver.runUntilQuiet();
    const before = await call("/admin/reset").then((r) => (r.status === 200 ? json(r) : undefined));
    const earliest = await reset({ to: "earliest" });
    expect(earliest.status).toBe(409);
    expect((await json(earliest)).message).toMatch(/only forward.*new applicationId/);
    const behind = await reset({ to: "offsets", offsets: [{ topic: "orders", partition: 3, offset: 0 }] });
    expect(behind.status).toBe(409);
    expect((await json(behind)).message).toMatch(/orders\/3 offset 0 is before what the application has processed and committed/);
    // Bad requests: an internal topic, a partition out of range, a missing timestamp.
    expect((await reset({ to: "latest", topics: [CHANGELOG] })).status).toBe(400);
    expect((await reset({ to: "offsets", offsets: [{ topic: "orders", partition: 99, offset: 0 }] })).status).toBe(400);
    expect((await reset({ to: "timestamp" })).status).toBe(400);
    // Nothing moved: the last reset is the one before, and the store as it was.
    const after = await call("/admin/reset").then((r) => (r.status === 200 ? json(r) : undefined));
    expect(after).toEqual(before);
    await append(3, [{ key: key!, amount: 4 }]);
    await driver.runUntilQuiet();
    expect(await total(key!)).toEqual({ count: 3, sum: 7 });
  });

  it("survives the coordinator dying right after it stored the reset: it is finished on its own, each task applying it once", async () => {
    const [key] = keysOn(0, 1, "reset-crash");
    await halt();
    const base = await append(0, [
      { key: key!, amount: 1 },
      { key: key!, amount: 2 },
    ]);
    await coordinator().crash("reset:after-record");
    const died = await reset({ to: "latest", id: "crash-test-reset" });
    expect(died.status).toBeGreaterThanOrEqual(500);
    // Nothing drives it but the coordinator's alarm.
    await until(
      async () => {
        const r = await call("/admin/reset");
        return r.status === 200 && (await json(r)).reset.finishedAt !== null;
      },
      30_000,
      "the reset to finish on its own",
      200,
    );
    const { reset: done } = await json(await call("/admin/reset"));
    expect(done).toMatchObject({ id: "crash-test-reset", pending: 0 });
    expect(done.partitions).toContainEqual({ topic: "orders", partition: 0, from: base, to: base + 2, skipped: 2 });
    // Asking again with the same id answers that reset, it does not make another.
    const again = await reset({ to: "latest", id: "crash-test-reset" });
    expect(again.status).toBe(200);
    expect((await json(again)).reset).toEqual(done);
    await resume();
    await append(0, [{ key: key!, amount: 4 }]);
    await driver.runUntilQuiet();
    expect(await total(key!)).toEqual({ count: 1, sum: 4 });
  });
});
