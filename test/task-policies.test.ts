/**
 * StreamTask with wall-clock punctuators and the uncaught-error policies, on a controlled clock:
 * a punctuation commits like a batch (one transaction with its outbox, sent exactly once), the
 * task says when it must be woken (`wakeAt`), and an error that escapes processing rolls the
 * commit back and then is retried with back-off, stops the task, or asks for an application shutdown.
 * And input progress goes to the consumer group at most every OFFSET_COMMIT_INTERVAL_MS.
 */
import { env } from "cloudflare:workers";
import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { DurableLog } from "../src/log/durable-log";
import type { Log, TopicPartition } from "../src/log/types";
import { APPLICATION_SHUT_DOWN } from "../src/task/protocol";
import { StreamTask, type TaskOptions } from "../src/task/stream-task";
import type { Application } from "../src/application";
import { policiesApp, type PolicyEvent } from "./support/policies-app";

const EVERY_MS = 100;
const START = 1_700_000_000_000;

interface Fixture {
  readonly task: StreamTask;
  readonly log: Log;
  readonly app: Application;
  readonly clock: { now: number };
  readonly events: TopicPartition;
  readonly flushedTopic: TopicPartition;
  send(...events: [key: string, event: PolicyEvent][]): Promise<void>;
  /** A new StreamTask on the same storage: what a restart of the object makes. */
  restart(options?: Partial<TaskOptions>): StreamTask;
  readAll(tp: TopicPartition): Promise<{ key: string | null; value: string }[]>;
}

/** Runs `body` with a RUNNING task 0_0 of a private copy of the policies app, in its own object. */
async function withTask(id: string, body: (f: Fixture) => Promise<void>, options: Partial<TaskOptions> = {}, everyMs = EVERY_MS): Promise<void> {
  const app = policiesApp(id, everyMs);
  const log = new DurableLog(env.LOG_PARTITION, app.catalog);
  const clock = { now: START };
  const events = { topic: `${id}-events`, partition: 0 };
  const flushedTopic = { topic: `${id}-flushed`, partition: 0 };
  await runInDurableObject(env.TASK_OBJECT.getByName(`${id}@x`), async (_, state) => {
    const make = (more: Partial<TaskOptions> = {}) =>
      new StreamTask({
        application: app,
        log,
        storage: state.storage,
        clock: () => clock.now,
        retryBackoff: { initialMs: 50, maxMs: 400 },
        // What the log and the group acknowledged is written down at once unless a test says otherwise (RECORD_OWED_MS).
        owedMs: 0,
        ...options,
        ...more,
      });
    const task = make();
    await task.assign({ taskId: "0_0", placement: "x", role: "active", epoch: 1 });
    expect(task.meta()?.state).toBe("RUNNING");
    await body({
      task,
      log,
      app,
      clock,
      events,
      flushedTopic,
      send: async (...list) => {
        await log.append(
          events,
          list.map(([key, event]) => ({ key, value: JSON.stringify(event) })),
        );
      },
      restart: make,
      readAll: async (tp) => (await log.fetch(tp, 0, { maxRecords: 10_000, maxBytes: 1 << 24 })).records.map((r) => ({ key: r.key, value: r.value })),
    });
  });
}

const position = (task: StreamTask, id: string) => task.positions()[`${id}-events/0`] ?? 0;

describe("wall-clock punctuation in the task", () => {
  it("schedules from the first step, commits each punctuation with its outbox, and wakes only when one is due", async () => {
    await withTask("wallclock", async ({ task, log, app, clock, send, flushedTopic, readAll }) => {
      // The first step makes the processors, whose init schedules the punctuator, without input.
      expect(task.wakeAt()).toBeUndefined();
      expect(await task.step()).toBe("idle");
      expect(task.wakeAt()).toBe(START + EVERY_MS);

      await send(["a", {}], ["a", {}], ["b", {}], ["a", {}]);
      expect(await task.step()).toBe("more");
      expect(task.queries.get("wallclock-pending", "a")).toBe("3");
      expect(await readAll(flushedTopic)).toEqual([]);

      // Not due yet: a step commits nothing at all.
      const changelogs = app.changelogPartitions("0_0");
      const ends = async () => Promise.all(changelogs.map(async (tp) => (await log.offsets(tp)).latest));
      const before = await ends();
      clock.now = START + EVERY_MS - 1;
      expect(await task.step()).toBe("idle");
      expect(await ends()).toEqual(before);

      // Due: the punctuator's output, store writes and changelog records commit and are sent.
      clock.now = START + EVERY_MS + 30;
      expect(await task.step()).toBe("idle");
      expect(await readAll(flushedTopic)).toEqual([
        { key: "a", value: "3" },
        { key: "b", value: "1" },
      ]);
      expect(task.queries.get("wallclock-flushed", "a")).toBe("3");
      expect(task.queries.get("wallclock-pending", "a")).toBeUndefined();
      expect(task.pendingOutboxBatches()).toBe(0);
      // The changelogs carry every write of the punctuation (two puts, two deletes), and the checkpoints follow.
      const after = await ends();
      expect(after.reduce((n, e) => n + e, 0) - before.reduce((n, e) => n + e, 0)).toBe(4);
      expect(changelogs.map((tp) => task.checkpoints().get(`${tp.topic}/${tp.partition}`))).toEqual(after);
      // The next one stays on its grid; a late wake-up runs it once, not once per missed interval.
      expect(task.wakeAt()).toBe(START + 2 * EVERY_MS);
      await send(["c", {}]);
      clock.now = START + 5 * EVERY_MS + 10;
      expect(await task.step()).toBe("more");
      expect((await readAll(flushedTopic)).map((r) => r.key)).toEqual(["a", "b", "c"]);
      expect(task.wakeAt()).toBe(START + 6 * EVERY_MS);
      expect(task.counters.snapshot().events.punctuations).toBe(2);
    });
  });

  it("sends a punctuation's records exactly once when the object dies while sending them", async () => {
    await withTask("wallclock-crash", async ({ task, clock, send, flushedTopic, readAll, restart }) => {
      await send(["a", {}], ["b", {}]);
      expect(await task.step()).toBe("more");
      // The punctuation commits, then the process dies in the middle of sending its outbox.
      const dying = restart({
        onCommitStep: (step) => {
          if (step === "mid-send") throw new Error("process died");
        },
      });
      expect(await dying.step()).toBe("idle"); // its first step makes its processors: their schedule starts now
      clock.now += EVERY_MS;
      await expect(dying.step()).rejects.toThrow("process died");
      expect(dying.pendingOutboxBatches()).toBeGreaterThan(0);

      // A restarted instance sends what is left; the log takes resent batches once.
      const revived = restart();
      expect(await revived.step()).toBe("idle");
      expect(revived.pendingOutboxBatches()).toBe(0);
      expect(await readAll(flushedTopic)).toEqual([
        { key: "a", value: "1" },
        { key: "b", value: "1" },
      ]);
      expect(revived.queries.get("wallclock-crash-flushed", "a")).toBe("1");
    });
  });
});

describe("uncaught errors", () => {
  it('"retry": rolls the commit back, backs off (doubling), then processes the same input again', async () => {
    await withTask("retrying", async ({ task, clock, send, app }) => {
      await send(["ok", {}], ["flaky", { fail: "transient", times: 2 }], ["ok", {}]);
      const changelog = app.changelogPartitions("0_0")[0]!;
      expect(await task.step()).toBe("waiting");
      // Nothing of the batch happened, not even the record before the failing one.
      expect(position(task, "retrying")).toBe(0);
      expect(task.queries.get("retrying-pending", "ok")).toBeUndefined();
      expect(task.checkpoints().get(`${changelog.topic}/${changelog.partition}`)).toBeUndefined();
      expect(task.meta()?.failure).toBeNull();
      expect(task.wakeAt()).toBe(START + 50);
      // Woken early (new input): still waiting, no attempt made.
      expect(await task.step()).toBe("waiting");
      expect(task.counters.snapshot().uncaughtErrors.retry).toBe(1);

      clock.now = START + 50;
      expect(await task.step()).toBe("waiting");
      expect(task.wakeAt()).toBe(START + 50 + 100);
      clock.now = START + 150;
      expect(await task.step()).toBe("more");
      expect(position(task, "retrying")).toBe(3);
      expect(task.queries.get("retrying-pending", "ok")).toBe("2");
      expect(task.queries.get("retrying-pending", "flaky")).toBe("1");
      expect(task.counters.snapshot().uncaughtErrors).toEqual({ fail: 0, retry: 2, "shutdown-application": 0 });
      // Success ends the back-off: the next wake-up is the punctuator's again, whose schedule
      // started with the processors rebuilt for the attempt that succeeded (as Kafka's restart with a task).
      expect(task.wakeAt()).toBe(START + 150 + EVERY_MS);
    });
  });

  it("a lingering send is not held back by a retry's back-off, nor by a task that stops or is halted", async () => {
    /** Two commits 10 ms apart under a 100 ms linger: the first is sent, the second lingers. Returns the changelog's end, as the log has it. */
    const twoCommits = async ({ task, log, app, clock, send }: Fixture): Promise<() => Promise<number>> => {
      const changelog = app.changelogPartitions("0_0")[0]!;
      const sent = async () => (await log.offsets(changelog)).latest;
      await send(["a", {}]);
      expect(await task.step()).toBe("more");
      clock.now += 10;
      await send(["b", {}]);
      expect(await task.step()).toBe("more");
      expect(await sent()).toBe(1);
      return sent;
    };
    await withTask(
      "lingering-retry",
      async (f) => {
        const { task, clock, send } = f;
        const sent = await twoCommits(f);
        // The next record fails and backs off past the end of the linger: the alarm comes back
        // for the send first, and sends it though the retry still waits.
        clock.now += 10;
        await send(["flaky", { fail: "transient", times: 3 }]);
        expect(await task.step()).toBe("waiting");
        expect(task.wakeAt()).toBe(START + 20 + 50);
        clock.now = START + 70;
        expect(await task.step()).toBe("waiting");
        expect(task.wakeAt()).toBe(START + 100);
        clock.now = START + 100;
        expect(await task.step()).toBe("waiting");
        expect(await sent()).toBe(2);
        expect(task.wakeAt()).toBe(START + 70 + 100);
      },
      { lingerMs: 100 },
    );
    await withTask(
      "lingering-fail",
      async (f) => {
        const { task, log, app, clock, events, send } = f;
        const sent = await twoCommits(f);
        // A fatal record stops the task: what the commit before it left lingering goes first.
        clock.now += 10;
        await send(["bad", { fail: "fatal", times: 1 }]);
        expect(await task.step()).toBe("blocked");
        expect(await sent()).toBe(2);
        expect((await log.committedOffset(app.groupId, events))?.offset).toBe(2);
      },
      { lingerMs: 100 },
    );
    await withTask(
      "lingering-halt",
      async (f) => {
        const sent = await twoCommits(f);
        // The application is shut down: the instance stops, and sends what it had committed.
        await f.task.halt(`${APPLICATION_SHUT_DOWN}: task 0_1 failed`);
        expect(await sent()).toBe(2);
      },
      { lingerMs: 100 },
    );
  });

  it('"fail": stops the task with the error until it is resumed', async () => {
    await withTask("failing", async ({ task, send }) => {
      await send(["ok", {}], ["bad", { fail: "fatal", times: 2 }]);
      expect(await task.step()).toBe("blocked");
      expect(task.meta()).toMatchObject({ state: "RUNNING", shutdownRequested: false });
      expect(task.meta()?.failure).toMatch(/bad cannot be processed/);
      expect(position(task, "failing")).toBe(0);
      expect(task.wakeAt()).toBeUndefined();
      expect(await task.step()).toBe("blocked");

      // Resumed, it tries again (and fails again: this record fails twice).
      task.resume();
      expect(await task.step()).toBe("blocked");
      task.resume();
      expect(await task.step()).toBe("more");
      expect(position(task, "failing")).toBe(2);
      expect(task.counters.snapshot().uncaughtErrors.fail).toBe(2);
    });
  });

  it('"shutdown-application": stops the task and keeps the request until it is reported', async () => {
    await withTask("poisoned", async ({ task, send, restart }) => {
      await send(["pill", { fail: "shutdown" }]);
      expect(await task.step()).toBe("blocked");
      expect(task.meta()).toMatchObject({ shutdownRequested: true });
      expect(task.meta()?.failure).toMatch(/pill is a poison pill/);
      // The request is durable: a restarted object still has it to report.
      expect(restart().meta()?.shutdownRequested).toBe(true);
      task.shutdownReported();
      expect(task.meta()).toMatchObject({ shutdownRequested: false });
      expect(task.counters.snapshot().uncaughtErrors["shutdown-application"]).toBe(1);
    });
  });

  it("a halted task stops processing, stays halted through a wipe, and runs again when resumed", async () => {
    await withTask("halted", async ({ task, send }) => {
      await send(["a", {}]);
      await task.halt(`${APPLICATION_SHUT_DOWN}: task 0_1 failed`);
      expect(await task.step()).toBe("blocked");
      expect(position(task, "halted")).toBe(0);
      // A wipe cures corruption, not a shutdown.
      task.wipe();
      await task.tryCompleteRestoration();
      expect(task.meta()?.failure).toMatch(/^application shut down/);
      expect(await task.step()).toBe("blocked");
      task.resume();
      expect(await task.step()).toBe("more");
      expect(position(task, "halted")).toBe(1);
      // A task already stopped keeps its own reason when halted.
      await task.halt("first");
      await task.halt("second");
      expect(task.meta()?.failure).toBe("first");
    });
  });
});

describe("input progress to the group", () => {
  // The policies app's punctuator, far from the offsets' interval so that `wakeAt` tells them apart.
  const PUNCTUATE_EVERY_MS = 10_000;
  it("goes once it has been owed owedMs (RECORD_OWED_MS), with whatever came meanwhile, when due once the task is idle (its timer's time), and at once when asked", async () => {
    await withTask(
      "offsets",
      async ({ task, log, app, clock, events, send }) => {
        const group = async () => (await log.committedOffset(app.groupId, events))?.offset ?? null;
        await send(["a", {}], ["b", {}]);
        expect(await task.step()).toBe("more");
        // Processed, committed and sent: owed to the group from now on.
        expect(await group()).toBeNull();
        clock.now += 10;
        await send(["c", {}]);
        expect(await task.step()).toBe("more");
        expect(position(task, "offsets")).toBe(3);
        expect(await group()).toBeNull();
        // Idle before it is due: still not committed, and the task asks to be woken when it is.
        expect(await task.step()).toBe("idle");
        expect(await group()).toBeNull();
        expect(task.wakeAt()).toBe(START + 1_000);
        clock.now = START + 1_000;
        expect(await task.step()).toBe("idle");
        expect(await group()).toBe(3);
        // Nothing left owed: the next wake-up is the punctuator's.
        expect(task.wakeAt()).toBe(START + PUNCTUATE_EVERY_MS);
        // Asked for (a drain, a revocation): at once.
        clock.now += 1;
        await send(["d", {}]);
        expect(await task.step()).toBe("more");
        expect(await group()).toBe(3);
        await task.commitInputOffsets();
        expect(await group()).toBe(4);
      },
      { owedMs: 1_000 },
      PUNCTUATE_EVERY_MS,
    );
  });

  it("records acknowledgements with the next commit, not in a storage commit of their own; a restart before that resends them, once", async () => {
    await withTask(
      "acks",
      async ({ task, log, app, clock, send, restart }) => {
        const changelog = app.changelogPartitions("0_0").find((c) => c.store === "acks-pending")!;
        const key = `${changelog.topic}/${changelog.partition}`;
        const end = async () => (await log.offsets(changelog)).latest;
        await send(["a", {}], ["b", {}]);
        expect(await task.step()).toBe("more");
        // Sent; the acknowledgements are owed (in memory), the checkpoint stays behind (never ahead, I1).
        expect(await end()).toBe(2);
        expect(task.checkpoints().get(key)).toBeUndefined();
        clock.now += 10;
        await send(["c", {}]);
        expect(await task.step()).toBe("more");
        expect(await end()).toBe(3);
        expect(task.pendingOutboxBatches()).toBe(0);
        // Acknowledged, not yet recorded: the checkpoint stays behind (never ahead, I1).
        expect(task.checkpoints().get(key)).toBe(2);
        // A restart loses what was held: the rows are sent again, and the log answers them as retries.
        const again = restart();
        clock.now += 10;
        await send(["d", {}]);
        expect(await again.step()).toBe("more");
        expect(await end()).toBe(4);
        expect(again.checkpoints().get(key)).toBe(3);
        // The next commit records d's acknowledgement.
        clock.now += 10;
        await send(["e", {}]);
        expect(await again.step()).toBe("more");
        expect(again.checkpoints().get(key)).toBe(4);
        expect(await end()).toBe(5);
        expect(again.queries.get("acks-pending", "c")).toBe("1");
      },
      { owedMs: 1_000 },
      PUNCTUATE_EVERY_MS,
    );
  });
});
