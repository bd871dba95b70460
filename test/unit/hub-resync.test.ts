/**
 * A hub's fresh snapshot after a resync (src/subscriptions/hub-resync.ts) and the snapshot a
 * subscription takes from the owning tasks (src/subscriptions/store-snapshot.ts): the events the
 * socket gets, where it stands after them, and the retries and refusals of the snapshot.
 */
import { describe, expect, it } from "vitest";
import { ordersTotalsTopology } from "../../examples/orders-totals/topology";
import { pageViewsTopology } from "../../examples/page-views/topology";
import { encodeTime } from "../../src/streams/state/key-codec";
import { windowRowsPrefix } from "../../src/subscriptions/window-keys";
import { Application } from "../../src/application";
import { newSocket, parseHubStart } from "../../src/subscriptions/hub-sockets";
import { planResnapshot, RESYNC_EVENT_MESSAGE, resnapshotOf, sortLost } from "../../src/subscriptions/hub-resync";
import { decodeToken } from "../../src/subscriptions/resume-token";
import { MAX_SNAPSHOT_KEYS, SNAPSHOT_WAIT_MS, SnapshotRefused, type SnapshotPorts, takeSnapshot } from "../../src/subscriptions/store-snapshot";
import type { SnapshotAnswer } from "../../src/task/protocol";

const application = new Application(ordersTotalsTopology("fail", 4));
const found = application.store("totals")!;
const key = "alice";
const value = JSON.stringify({ count: 3, sum: 9 });
const socket = (over: { sent?: number; acked?: number } = {}) => ({
  ...newSocket({ topic: found.store.changelogTopic, partition: 2, store: "totals", view: "key", key, position: 4, messages: [], snapshots: true }),
  ...over,
});

describe("planResnapshot", () => {
  it("sends resync, then the snapshot marked as such with the token of its offset, and moves the socket there", () => {
    const s = socket({ sent: 5, acked: 5 });
    const { target } = resnapshotOf(found.store, s)!;
    const messages = planResnapshot(s, target, { entries: [{ key, value }], positions: new Map([[2, 40]]) }, 7, 100);
    expect(messages[0]).toBe(RESYNC_EVENT_MESSAGE);
    const snapshot = JSON.parse(messages[1]!);
    expect(messages).toHaveLength(2);
    expect(snapshot).toMatchObject({ event: "snapshot", data: { key: "alice", value: { count: 3, sum: 9 } } });
    expect([...decodeToken(snapshot.id)!.positions]).toEqual([[2, 40]]);
    expect(s).toMatchObject({ position: 40, sent: 7, acked: 5, fullSince: null });
  });

  it("sends no resync to a socket that was sent nothing (a stale token), and an absent key as null", () => {
    const s = socket();
    const { target } = resnapshotOf(found.store, s)!;
    const messages = planResnapshot(s, target, { entries: [], positions: new Map([[2, 12]]) }, 7, 100);
    expect(messages.map((m) => JSON.parse(m))).toEqual([{ event: "snapshot", data: { key: "alice", value: null }, id: expect.any(String) }]);
    expect(s).toMatchObject({ position: 12, sent: 1 });
  });

  it("counts the snapshot against the window: a window it fills is full from now", () => {
    const s = socket({ sent: 99, acked: 0 });
    const { target } = resnapshotOf(found.store, s)!;
    planResnapshot(s, target, { entries: [], positions: new Map([[2, 12]]) }, 7, 100);
    expect(s).toMatchObject({ sent: 101, fullSince: 7 });
  });

  it("marks only a subscriber's key or windows socket as one the hub snapshots; a start's flag that is not a boolean is no start", () => {
    const start = { topic: "c", partition: 0, store: "totals", key, position: 0, messages: [] };
    expect(newSocket({ ...start, view: "windows", snapshots: true }).snapshots).toBe(true);
    expect(newSocket({ ...start, view: "key" }).snapshots).toBeUndefined();
    expect(newSocket({ ...start, view: "prefix", snapshots: true }).snapshots).toBeUndefined();
    expect(parseHubStart({ ...start, view: "key", snapshots: "yes" })).toBeUndefined();
    expect(parseHubStart({ ...start, view: "key", snapshots: true })).toMatchObject({ snapshots: true });
  });

  it("snapshots a key's windows as the windows route does: each row's window, then snapshot-end with the count and the token", () => {
    const views = new Application(pageViewsTopology()).store("views-per-minute")!;
    const region = "eu";
    const s = {
      ...newSocket({ topic: views.store.changelogTopic, partition: 1, store: views.store.name, view: "windows", key: region, position: 0, messages: [] }),
      sent: 3,
      acked: 3,
    };
    const resnapshot = resnapshotOf(views.store, s)!;
    const prefix = windowRowsPrefix(region);
    expect(resnapshot.selection).toEqual({ prefix, limit: MAX_SNAPSHOT_KEYS + 1 });
    const row = `${prefix}${encodeTime(60_000)}${encodeTime(120_000)}`;
    const messages = planResnapshot(s, resnapshot.target, { entries: [{ key: row, value: "2" }], positions: new Map([[1, 9]]) }, 0, 100).map((m) =>
      JSON.parse(m),
    );
    expect(messages.map((m) => m.event)).toEqual(["resync", "snapshot", "snapshot-end"]);
    expect(messages[1]).toEqual({ event: "snapshot", data: { key: region, window: { start: 60_000, end: 120_000 }, value: 2 } });
    expect(messages[2]).toEqual({ event: "snapshot-end", data: { key: region, windows: 1 }, id: expect.stringMatching(/^w1\./) });
  });

  it("sorts the lost sockets: a subscriber's grouped by what it watches (one snapshot each group), a Worker's closed", () => {
    const at = (key: string, view: "key" | "windows", snapshots?: boolean) => ({
      ...socket(),
      key,
      view,
      ...(snapshots === undefined ? { snapshots: undefined } : { snapshots }),
    });
    const lost = [at("a", "key", true), at("b", "key", true), at("a", "key", undefined), at("a", "windows", true), at("a", "key", true)];
    const { groups, close } = sortLost(lost, (s) => s);
    expect(groups).toEqual([[lost[0], lost[4]], [lost[1]], [lost[3]]]);
    expect(close).toEqual([lost[2]]);
  });

  it("has no fresh snapshot for a prefix's or a tail's socket (the Worker holding the stream takes it)", () => {
    expect(resnapshotOf(found.store, { ...socket(), view: "prefix" })).toBeUndefined();
    expect(resnapshotOf(found.store, { ...socket(), view: "tail" })).toBeUndefined();
  });
});

describe("takeSnapshot", () => {
  const ports = (answers: (SnapshotAnswer | undefined)[], earliest = 0) => {
    let now = 0;
    const asked: string[] = [];
    const p: SnapshotPorts = {
      ask: async (taskId) => {
        asked.push(taskId);
        return answers.length > 1 ? answers.shift() : answers[0];
      },
      offsets: async () => ({ earliest, latest: earliest }),
      taskOf: (subtopology, partition) => application.taskForStorePartition(subtopology, partition),
      now: () => now,
      sleep: async (ms) => {
        now += ms;
      },
    };
    return { p, asked };
  };

  it("asks the owning task again while its changelog batch is on its way or no instance answers, then takes its answer", async () => {
    const { p, asked } = ports([{ status: "waiting" }, undefined, { status: "ok", entries: [{ key, value }], offset: 17 }]);
    const snapshot = await takeSnapshot(p, found, [2], { key });
    expect(snapshot).toEqual({ entries: [{ key, value }], positions: new Map([[2, 17]]) });
    expect(asked).toEqual(Array(3).fill(application.taskForStorePartition(found.subtopology, 2)));
  });

  it("starts a store that reflects nothing of its changelog at the changelog's earliest offset", async () => {
    const { p } = ports([{ status: "ok", entries: [], offset: null }], 8);
    expect((await takeSnapshot(p, found, [2], { key })).positions).toEqual(new Map([[2, 8]]));
  });

  it("refuses (503) while the task restores, or once it could not answer within the wait; (400) past the most keys", async () => {
    await expect(
      takeSnapshot(ports([{ status: "restoring", progress: { restored: 1, total: 2 } } as SnapshotAnswer]).p, found, [2], { key }),
    ).rejects.toMatchObject({
      status: 503,
      message: expect.stringContaining("restoring"),
    });
    const waiting = ports([{ status: "waiting" }]);
    await expect(takeSnapshot(waiting.p, found, [2], { key })).rejects.toBeInstanceOf(SnapshotRefused);
    expect(waiting.p.now()).toBeLessThanOrEqual(SNAPSHOT_WAIT_MS);
    const many = Array.from({ length: MAX_SNAPSHOT_KEYS + 1 }, (_, i) => ({ key: JSON.stringify(`k${i}`), value }));
    await expect(
      takeSnapshot(ports([{ status: "ok", entries: many, offset: 1 }]).p, found, [2], { prefix: "", limit: MAX_SNAPSHOT_KEYS + 1 }, "too many"),
    ).rejects.toMatchObject({
      status: 400,
      message: "too many",
    });
  });
});
