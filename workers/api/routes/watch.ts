/**
 * Live subscriptions (docs/subscriptions.md), as server-sent events:
 * `GET /stores/:store/keys/:key/watch` and `GET /stores/:store/watch?prefix=`. A new subscription
 * starts with a snapshot of the committed values at known changelog offsets, taken before the
 * response opens (so a restoring task answers 503 as a point read does); a `Last-Event-ID`
 * resumes from the offsets its token names. Then src/subscriptions/watch-loop.ts reads the
 * store's changelog partitions — the key's, found as the point read finds it, or all of them for
 * a prefix — and sends each committed change of the watched keys. Window and session stores:
 * `GET /stores/:store/windows/:key/watch`, the key's windows (src/subscriptions/window-keys.ts).
 * Each path also takes a WebSocket (`Upgrade: websocket`, ../watch-socket.ts), and a resume token
 * as `?lastEventId=` (a browser's first connection cannot set `Last-Event-ID`).
 */
import { zValidator } from "@hono/zod-validator";
import { Hono, type Context } from "hono";
import { z } from "zod";
import { partitionForKey } from "../../../src/log/partitioner";
import { serializedPrefixFromText } from "../../../src/streams/key-text";
import { decodeToken, type Positions } from "../../../src/subscriptions/resume-token";
import { changeData } from "../../../src/subscriptions/change-data";
import { windowRowsPrefix } from "../../../src/subscriptions/window-keys";
import type { FollowedLog, StreamPorts } from "../../../src/subscriptions/follow-log";
import { runWatch, type Snapshot, type WatchStart, type WatchTarget } from "../../../src/subscriptions/watch-loop";
import type { SnapshotSelection } from "../../../src/task/protocol";
import type { ApiEnv } from "../context";
import { ApiError } from "../http-error";
import { queryableStore } from "../queryable-store";
import { storeKey } from "../store-key";
import { openStream, takeSlot } from "../subscription-stream";
import { invalidInput } from "../validation";
import { MAX_SNAPSHOT_KEYS, takeSnapshot, type WatchedStore } from "../watch-snapshot";
import { openSocket, wantsWebSocket } from "../watch-socket";
import { connectHub, hubFor, hubsServe, openHubSocket } from "../hub-socket";
import { type LinkEvent, REFUSED, runHubWatch } from "../../../src/subscriptions/hub-watch";
import type { HubView } from "../../../src/subscriptions/hub-sockets";
import { encodeToken } from "../../../src/subscriptions/resume-token";

export { watchSlots } from "../subscription-stream";

const WATCH_SUFFIX = "/watch";

const lastEventId = z.string().optional();
const prefixQuery = z.object({ prefix: z.string().max(16_384, "at most 16384 characters").optional(), lastEventId }).strict();
const windowsQuery = z.object({ lastEventId }).strict();

/** The store, if a subscription can watch it: a key-value store of the application's own tasks (a global table's too). */
function watchedStore(c: Context<ApiEnv>): WatchedStore {
  return queryableStore(c.var.host.application, c.req.param("store")!, "keys");
}

/**
 * The changelog partitions a prefix subscription follows: every one; a global table's first only.
 * Every task of a global table holds the whole table and logs every change of it to its own
 * changelog partition, so one partition (the task a scan asks) has every change once, where all
 * of them would have each change once per task (docs/subscriptions.md, *Global tables*).
 */
function prefixPartitions(found: WatchedStore): number[] {
  return found.store.global ? [0] : Array.from({ length: found.subtopology.partitions }, (_, p) => p);
}

/** The store, if a windows subscription can watch it: a window or session store (404 unknown, 400 another kind, as the read). */
function windowedStore(c: Context<ApiEnv>): WatchedStore {
  return queryableStore(c.var.host.application, c.req.param("store")!, "windows");
}

/** Where the stream starts: the client's token (checked to be this watch's), or a snapshot taken now. */
async function startOf(
  c: Context<ApiEnv>,
  found: WatchedStore,
  partitions: readonly number[],
  selection: SnapshotSelection,
  tooMany?: string,
): Promise<WatchStart> {
  const last = c.req.header("Last-Event-ID") || c.req.query("lastEventId");
  if (last === undefined || last === "") return { snapshot: await takeSnapshot(c.var.host, found, partitions, selection, tooMany) };
  const token = decodeToken(last);
  const samePartitions = token !== undefined && token.positions.size === partitions.length && partitions.every((p) => token.positions.has(p));
  if (!token || token.topic !== found.store.changelogTopic || !samePartitions)
    throw new ApiError(400, "invalid_input", "Last-Event-ID (or lastEventId): not a resume token of this subscription (send back the id of its last event)");
  return { resume: token.positions as Positions };
}

/**
 * Opens the subscription: a WebSocket when the request asks for one, else the event stream. A key's
 * (or a key's windows') socket is handed to its partition's hub (../hub-socket.ts); any other
 * subscription is held by this request, which follows the changelog through the hubs of the
 * watched partitions (src/subscriptions/hub-watch.ts) when there are hubs, else by reading it
 * itself. Either way it holds a slot of the isolate and one of what it watches (`watched`: at most
 * MAX_WATCHES_PER_KEY subscriptions of one key, prefix or key's windows) while it is open.
 */
async function open(
  c: Context<ApiEnv>,
  target: WatchTarget,
  start: WatchStart,
  snapshot: () => Promise<Snapshot>,
  watched: string,
  hubbed: { store: string; view: HubView; key: string },
) {
  const socket = wantsWebSocket(c.req.raw);
  const hub = socket && hubbed.view !== "prefix" ? hubFor(c, target) : undefined;
  const token = (position: number) => encodeToken({ topic: target.topic, positions: new Map([[target.partitions[0]!, position]]) });
  const held = hub ? await openHubSocket(c, hub, target, start, hubbed, token) : undefined;
  if (held) return held;
  const throughHubs = hubsServe(c);
  const run = async (ports: StreamPorts & FollowedLog) => {
    const watchPorts = { ...ports, snapshot };
    if (throughHubs) {
      const connect = (partition: number, position: number, deliver: (event: LinkEvent) => void) =>
        connectHub(c, { topic: target.topic, partition, ...hubbed, position }, deliver);
      // A hub that refuses (its limits) leaves the stream to this request's own reads.
      if ((await runHubWatch(target, { ...watchPorts, connect }, start)) !== REFUSED) return;
    }
    await runWatch(target, watchPorts, start);
  };
  // Counted per watched key too: the store, what is watched (a key, a prefix, a key's windows) and its serialized form.
  const slot = takeSlot(`${target.topic}\n${watched}`);
  if (socket) return openSocket(c, target.topic, slot, run);
  return openStream(c, target.topic, slot, run);
}

export const watch = new Hono<ApiEnv>()
  // The key route's pattern, as Hono matches no suffix after a pattern that takes slashes: a path
  // ending in `/watch` is a subscription (a key ending in "/watch" is read with its slash encoded,
  // `%2Fwatch`, which the path keeps encoded); any other goes on to the point read (stores.ts).
  .get("/stores/:store/keys/:key{[\\s\\S]+}", async (c, next) => {
    if (!c.req.path.endsWith(WATCH_SUFFIX)) return next();
    const found = watchedStore(c);
    const { key: typedKey, serialized: key } = storeKey(found.store, c.req.param("key").slice(0, -WATCH_SUFFIX.length));
    const partitions = [partitionForKey(key, found.subtopology.partitions)];
    const selection = { key };
    const data = changeData(found.store, "key", key, typedKey);
    const present = (k: string, value: string | null) => JSON.stringify(data(k, value));
    const target: WatchTarget = { topic: found.store.changelogTopic, partitions, watched: (k) => k === key, kind: "key", key, present };
    const start = await startOf(c, found, partitions, selection);
    return open(c, target, start, () => takeSnapshot(c.var.host, found, partitions, selection), `key\n${key}`, { store: found.store.name, view: "key", key });
  })
  .get("/stores/:store/watch", zValidator("query", prefixQuery, invalidInput), async (c) => {
    const found = watchedStore(c);
    const text = c.req.valid("query").prefix ?? "";
    const prefix = serializedPrefixFromText(found.store.keySerde, text);
    const partitions = prefixPartitions(found);
    const selection = { prefix, limit: MAX_SNAPSHOT_KEYS + 1 };
    const data = changeData(found.store, "prefix", prefix, undefined);
    const present = (k: string, value: string | null) => JSON.stringify(data(k, value));
    const target: WatchTarget = {
      topic: found.store.changelogTopic,
      partitions,
      watched: (k) => k.startsWith(prefix),
      kind: "prefix",
      present,
      snapshotEnd: (keys) => JSON.stringify({ prefix: text, keys }),
    };
    const start = await startOf(c, found, partitions, selection);
    return open(c, target, start, () => takeSnapshot(c.var.host, found, partitions, selection), `prefix\n${prefix}`, {
      store: found.store.name,
      view: "prefix",
      key: prefix,
    });
  })
  // As the key route: a windows path ending in `/watch` is a subscription, any other the read (stores.ts).
  .get("/stores/:store/windows/:key{[\\s\\S]+}", async (c, next) => {
    if (!c.req.path.endsWith(WATCH_SUFFIX)) return next();
    const query = windowsQuery.safeParse(c.req.query());
    if (!query.success) return invalidInput(query, c);
    const found = windowedStore(c);
    const { key: typedKey, serialized: key } = storeKey(found.store, c.req.param("key").slice(0, -WATCH_SUFFIX.length));
    const prefix = windowRowsPrefix(key);
    const partitions = [partitionForKey(key, found.subtopology.partitions)];
    const selection = { prefix, limit: MAX_SNAPSHOT_KEYS + 1 };
    const data = changeData(found.store, "windows", key, typedKey);
    const present = (row: string, value: string | null) => JSON.stringify(data(row, value));
    const target: WatchTarget = {
      topic: found.store.changelogTopic,
      partitions,
      watched: (row) => row.startsWith(prefix),
      kind: "prefix",
      present,
      snapshotEnd: (windows) => JSON.stringify({ key: typedKey, windows }),
    };
    const tooMany = `key ${JSON.stringify(typedKey)} has more than ${MAX_SNAPSHOT_KEYS} windows in store ${found.store.name}: too many to watch`;
    const snapshot = () => takeSnapshot(c.var.host, found, partitions, selection, tooMany);
    const start = await startOf(c, found, partitions, selection, tooMany);
    return open(c, target, start, snapshot, `windows\n${key}`, { store: found.store.name, view: "windows", key });
  });
