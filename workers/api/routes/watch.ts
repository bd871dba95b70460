/**
 * Live subscriptions (docs/subscriptions.md), as server-sent events:
 * `GET /stores/:store/keys/:key/watch` and `GET /stores/:store/watch?prefix=`. A new subscription
 * starts with a snapshot of the committed values at known changelog offsets, taken before the
 * response opens (so a restoring task answers 503 as a point read does); a `Last-Event-ID`
 * resumes from the offsets its token names. Then src/subscriptions/watch-loop.ts reads the
 * store's changelog partitions — the key's, found as the point read finds it, or all of them for
 * a prefix — and sends each committed change of the watched keys. Key-value stores only.
 */
import { zValidator } from "@hono/zod-validator";
import { Hono, type Context } from "hono";
import { z } from "zod";
import { partitionForKey } from "../../../src/log/partitioner";
import { keyForAnswer, serializedPrefixFromText } from "../../../src/streams/key-text";
import { decodeToken, type Positions } from "../../../src/subscriptions/resume-token";
import { runWatch, type Snapshot, type WatchStart, type WatchTarget } from "../../../src/subscriptions/watch-loop";
import type { SnapshotSelection } from "../../../src/task/protocol";
import type { ApiEnv } from "../context";
import { ApiError } from "../http-error";
import { queryableStore } from "../queryable-store";
import { storeKey } from "../store-key";
import { openStream, takeSlot } from "../subscription-stream";
import { invalidInput } from "../validation";
import { MAX_SNAPSHOT_KEYS, takeSnapshot, type WatchedStore } from "../watch-snapshot";

export { watchSlots } from "../subscription-stream";

const WATCH_SUFFIX = "/watch";

const prefixQuery = z.object({ prefix: z.string().max(16_384, "at most 16384 characters").optional() }).strict();

/** The store, if a subscription can watch it: a key-value store of the application's own tasks. */
function watchedStore(c: Context<ApiEnv>): WatchedStore {
  const name = c.req.param("store")!;
  const found = queryableStore(c.var.host.application, name, "keys");
  if (found.store.global) throw new ApiError(400, "invalid_input", `store ${name} is a global table: subscriptions to it are not built yet`);
  return found;
}

/** Where the stream starts: the client's token (checked to be this watch's), or a snapshot taken now. */
async function startOf(c: Context<ApiEnv>, found: WatchedStore, partitions: readonly number[], selection: SnapshotSelection): Promise<WatchStart> {
  const last = c.req.header("Last-Event-ID");
  if (last === undefined || last === "") return { snapshot: await takeSnapshot(c.var.host, found, partitions, selection) };
  const token = decodeToken(last);
  const samePartitions = token !== undefined && token.positions.size === partitions.length && partitions.every((p) => token.positions.has(p));
  if (!token || token.topic !== found.store.changelogTopic || !samePartitions)
    throw new ApiError(400, "invalid_input", "Last-Event-ID: not a resume token of this subscription (send back the id of its last event)");
  return { resume: token.positions as Positions };
}

/** Opens the event stream: the watch runs until the subscriber goes away, holding a slot. */
function open(c: Context<ApiEnv>, target: WatchTarget, start: WatchStart, snapshot: () => Promise<Snapshot>) {
  return openStream(c, target.topic, takeSlot(), (ports) => runWatch(target, { ...ports, snapshot }, start));
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
    const present = (k: string, value: string | null) =>
      JSON.stringify({
        key: k === key ? typedKey : keyForAnswer(found.store.keySerde, k),
        value: value === null ? null : found.store.valueSerde.deserialize(value),
      });
    const target: WatchTarget = { topic: found.store.changelogTopic, partitions, watched: (k) => k === key, kind: "key", key, present };
    const start = await startOf(c, found, partitions, selection);
    return open(c, target, start, () => takeSnapshot(c.var.host, found, partitions, selection));
  })
  .get("/stores/:store/watch", zValidator("query", prefixQuery, invalidInput), async (c) => {
    const found = watchedStore(c);
    const text = c.req.valid("query").prefix ?? "";
    const prefix = serializedPrefixFromText(found.store.keySerde, text);
    const partitions = Array.from({ length: found.subtopology.partitions }, (_, p) => p);
    const selection = { prefix, limit: MAX_SNAPSHOT_KEYS + 1 };
    const present = (k: string, value: string | null) =>
      JSON.stringify({ key: keyForAnswer(found.store.keySerde, k), value: value === null ? null : found.store.valueSerde.deserialize(value) });
    const target: WatchTarget = {
      topic: found.store.changelogTopic,
      partitions,
      watched: (k) => k.startsWith(prefix),
      kind: "prefix",
      present,
      snapshotEnd: (keys) => JSON.stringify({ prefix: text, keys }),
    };
    const start = await startOf(c, found, partitions, selection);
    return open(c, target, start, () => takeSnapshot(c.var.host, found, partitions, selection));
  });
