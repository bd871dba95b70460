/**
 * Watching a key's windows (docs/subscriptions.md): `GET /stores/:store/windows/:key/watch` on the
 * page-views example's window store, read as a client reads server-sent events. First the key's
 * windows and `snapshot-end`, then each committed change of one of its windows, naming the window
 * as the read route does; a client back with its last id after the task's object crashed gets the
 * changes after it, once; a socket its hub holds with a token too old gets a fresh snapshot from
 * the hub, on the same socket.
 */
import { env } from "cloudflare:workers";
import { expect, it } from "vitest";
import { application } from "../../examples/page-views/app";
import { MINUTE_MS } from "../../examples/page-views/topology";
import { TestDriver } from "../../platform/testing/test-driver";
import { partitionForKey } from "../../src/log/partitioner";
import { encodeToken } from "../../src/subscriptions/resume-token";
import { call, json } from "../support/api";
import { socketOf } from "../support/socket";
import { EventReader, type ServerSentEvent } from "../support/sse";

const driver = new TestDriver(env, application);
const view = (user: string, region: string, at: number) => ({ key: user, value: { region, page: "/" }, timestamp: at });

async function watch(region: string, lastId?: string): Promise<EventReader> {
  const response = await call(`/stores/views-per-minute/windows/${region}/watch`, { headers: lastId === undefined ? {} : { "Last-Event-ID": lastId } });
  expect(response.status, await (response.status === 200 ? "" : response.clone().text())).toBe(200);
  expect(response.headers.get("Content-Type")).toMatch(/^text\/event-stream/);
  return new EventReader(response);
}

/** One view of `region` at `at`, processed. */
async function viewAt(region: string, at: number): Promise<void> {
  await driver.pipe("page-views", [view(`u-${at}`, region, at)]);
  await driver.runUntilQuiet();
}

const windowAt = (minute: number) => ({ start: minute * MINUTE_MS, end: (minute + 1) * MINUTE_MS });
const parsed = (e: ServerSentEvent) => JSON.parse(e.data) as unknown;

it("sends the key's windows, snapshot-end with a token, then each committed change of a window of that key", async () => {
  await viewAt("eu", 1_000);
  await viewAt("eu", MINUTE_MS + 1_000);
  await viewAt("us", 2_000);
  const stream = await watch("eu");
  const snapshot = await stream.take(3);
  expect(snapshot.map((e) => [e.event, parsed(e), e.id])).toEqual([
    ["message", { key: "eu", window: windowAt(0), value: 1 }, undefined],
    ["message", { key: "eu", window: windowAt(1), value: 1 }, undefined],
    ["snapshot-end", { key: "eu", windows: 2 }, expect.stringMatching(/^w1\./)],
  ]);

  await viewAt("us", 3_000); // another key: not sent
  await viewAt("eu", 2_000);
  await viewAt("eu", 2 * MINUTE_MS + 1);
  const changes = await stream.take(2);
  expect(changes.map((e) => [e.event, parsed(e)])).toEqual([
    ["message", { key: "eu", window: windowAt(0), value: 2 }],
    ["message", { key: "eu", window: windowAt(2), value: 1 }],
  ]);
  expect(changes.every((e) => e.id?.startsWith("w1."))).toBe(true);
  // The read route names the same windows with the same values.
  const read = await json<{ windows: unknown[] }>(await call("/stores/views-per-minute/windows/eu"));
  expect(read.windows).toEqual([
    { window: windowAt(0), value: 2 },
    { window: windowAt(1), value: 1 },
    { window: windowAt(2), value: 1 },
  ]);
  await stream.close();
});

it("resumes with Last-Event-ID after the task's object crashed: every change after that event, once", async () => {
  const minute = 5;
  const stream = await watch("ap");
  expect(await stream.next()).toMatchObject({ event: "snapshot-end", data: JSON.stringify({ key: "ap", windows: 0 }) });
  await viewAt("ap", minute * MINUTE_MS + 1);
  expect(parsed(await stream.next())).toEqual({ key: "ap", window: windowAt(minute), value: 1 });
  const lastId = stream.lastId!;
  await stream.close();

  const task = (await json<{ task: string }>(await call("/stores/views-per-minute/windows/ap"))).task;
  expect((await call(`/admin/tasks/${task}/crash`, { method: "POST" })).status).toBe(200);
  for (let i = 2; i <= 4; i++) await viewAt("ap", minute * MINUTE_MS + i);

  const resumed = await watch("ap", lastId);
  const counts = await resumed.take(3);
  expect(counts.map(parsed)).toEqual([2, 3, 4].map((value) => ({ key: "ap", window: windowAt(minute), value })));
  // Nothing repeated: the next event is the next change.
  await viewAt("ap", (minute + 1) * MINUTE_MS);
  expect(parsed(await resumed.next())).toEqual({ key: "ap", window: windowAt(minute + 1), value: 1 });
  await resumed.close();
});

it("sends the same events over a WebSocket on the same path", async () => {
  await viewAt("af", 7 * MINUTE_MS);
  const socket = await socketOf(await call("/stores/views-per-minute/windows/af/watch", { headers: { Upgrade: "websocket" } }));
  expect(await socket.take(2)).toEqual([
    { event: "message", data: { key: "af", window: windowAt(7), value: 1 } },
    { event: "snapshot-end", data: { key: "af", windows: 1 }, id: expect.stringMatching(/^w1\./) },
  ]);
  await viewAt("af", 7 * MINUTE_MS + 1);
  expect(await socket.next()).toEqual({ event: "message", data: { key: "af", window: windowAt(7), value: 2 }, id: expect.stringMatching(/^w1\./) });
  socket.close();
});

it("answers 401 without a token, 404 for an unknown store and 400 for a store without windows, as the read route", async () => {
  expect((await call("/stores/views-per-minute/windows/eu/watch", { token: null })).status).toBe(401);
  const unknown = await call("/stores/nope/windows/eu/watch");
  expect(unknown.status).toBe(404);
  expect(await json(unknown)).toMatchObject({ error: "not_found", message: 'unknown store "nope"' });
  const keyValue = await call("/stores/regions/windows/eu/watch");
  expect(keyValue.status).toBe(400);
  expect(await json(keyValue)).toMatchObject({ error: "invalid_input", message: expect.stringContaining("not a window or session store") });
  expect((await call("/stores/views-per-minute/windows/eu/watch?from=1")).status).toBe(400);
});

it("answers a token the changelog no longer holds, on a socket its hub holds, with a fresh snapshot of the windows marked as such, then the changes", async () => {
  await viewAt("sa", 9 * MINUTE_MS);
  const { store, subtopology } = application.store("views-per-minute")!;
  const partition = partitionForKey(store.keySerde.serialize("sa"), subtopology.partitions);
  const stale = encodeToken({ topic: store.changelogTopic, positions: new Map([[partition, 1_000_000]]) });
  const socket = await socketOf(
    await call(`/stores/views-per-minute/windows/sa/watch?lastEventId=${encodeURIComponent(stale)}`, { headers: { Upgrade: "websocket" } }),
  );
  expect(await socket.take(2)).toEqual([
    { event: "snapshot", data: { key: "sa", window: windowAt(9), value: 1 } },
    { event: "snapshot-end", data: { key: "sa", windows: 1 }, id: expect.stringMatching(/^w1\./) },
  ]);
  await viewAt("sa", 9 * MINUTE_MS + 1);
  expect(await socket.next()).toEqual({ event: "message", data: { key: "sa", window: windowAt(9), value: 2 }, id: expect.stringMatching(/^w1\./) });
  expect(socket.closed).toBeUndefined();
  socket.close();
});
