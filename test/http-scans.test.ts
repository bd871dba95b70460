/**
 * `GET /stores/:store/keys`: pages across all partitions in UTF-8 key order, bounds, cursors that
 * stay correct while writes go on, bounded limits, and 503 while an owning task restores.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { partitionForKey } from "../src/log/partitioner";
import { compareKeys } from "../src/streams/state/key-value-store";
import { TestDriver } from "../platform/testing/test-driver";
import { application } from "./support/orders-app";
import { decodeCursor, encodeCursor } from "../workers/api/cursor";
import { mergeByKey } from "../workers/api/routes/scans";
import { call, json } from "./support/api";
import { activeInstance } from "./support/active";

const driver = new TestDriver(env, application);

type Page = { items: { key: string; value: { count: number; sum: number } }[]; next: string | null };

async function scan(params: Record<string, string>): Promise<Page> {
  const response = await call(`/stores/totals/keys?${new URLSearchParams(params)}`);
  expect(response.status, await response.clone().text()).toBe(200);
  return json<Page>(response);
}

/** Every page from the start, following cursors (at most `maxPages`). */
async function scanAll(params: Record<string, string>, maxPages = 100): Promise<Page["items"]> {
  const items: Page["items"] = [];
  let cursor: string | null = null;
  for (let i = 0; i < maxPages; i++) {
    const page: Page = await scan(cursor === null ? params : { ...params, cursor });
    items.push(...page.items);
    if (page.next === null) return items;
    cursor = page.next;
  }
  throw new Error("too many pages");
}

async function produce(keys: readonly string[], amount = 1): Promise<void> {
  await driver.pipe(
    "orders",
    keys.map((key) => ({ key, value: { amount } })),
  );
  await driver.runUntilQuiet();
}

describe("GET /stores/:store/keys", () => {
  it("merges every partition's entries in UTF-8 byte order, values deserialized", async () => {
    const keys = ["scan-a-b", "scan-a-a", "scan-a-é", "scan-a-😀", "scan-a-\uFFFD", "scan-a-Z", "scan-a-10", "scan-a-9"];
    await produce(keys, 3);
    expect(new Set(keys.map((k) => partitionForKey(k, 4))).size).toBeGreaterThan(1);
    const { items, next } = await scan({ prefix: "scan-a-" });
    const expected = [...keys].sort(compareKeys);
    // Code point order puts U+FFFD before the emoji (UTF-16 order would not).
    expect(expected.indexOf("scan-a-\uFFFD")).toBeLessThan(expected.indexOf("scan-a-😀"));
    expect(items.map((i) => i.key)).toEqual(expected);
    expect(items.every((i) => i.value.count === 1 && i.value.sum === 3)).toBe(true);
    expect(next).toBeNull();
  });

  it("applies from and to inclusively, together with a prefix", async () => {
    const keys = ["scan-b-1", "scan-b-2", "scan-b-3", "scan-b-4", "scan-b-5", "scan-bz"];
    await produce(keys);
    expect((await scan({ from: "scan-b-2", to: "scan-b-4" })).items.map((i) => i.key)).toEqual(["scan-b-2", "scan-b-3", "scan-b-4"]);
    expect((await scan({ prefix: "scan-b-", from: "scan-b-4" })).items.map((i) => i.key)).toEqual(["scan-b-4", "scan-b-5"]);
    expect((await scan({ prefix: "scan-b-", to: "scan-b-1" })).items.map((i) => i.key)).toEqual(["scan-b-1"]);
    expect((await scan({ from: "scan-b-4", to: "scan-b-2" })).items).toEqual([]);
    expect((await scan({ prefix: "scan-b-nothing" })).items).toEqual([]);
  });

  it("pages with a cursor that starts strictly after the last key, while writes go on", async () => {
    const keys = Array.from({ length: 12 }, (_, i) => `scan-c-${String(i).padStart(2, "0")}`);
    await produce(keys);
    const first = await scan({ prefix: "scan-c-", limit: "5" });
    expect(first.items.map((i) => i.key)).toEqual(keys.slice(0, 5));
    expect(first.next).not.toBeNull();
    expect(decodeCursor(first.next!)).toBe(keys[4]);

    // Writes behind the cursor are not revisited; writes ahead of it are seen; updated values too.
    await produce(["scan-c-00a", "scan-c-04a", "scan-c-99"], 7);
    await produce([keys[6]!], 5);
    const rest: Page["items"] = [];
    let cursor: string | null = first.next;
    while (cursor !== null) {
      const page: Page = await scan({ prefix: "scan-c-", limit: "5", cursor });
      expect(page.items.length).toBeLessThanOrEqual(5);
      rest.push(...page.items);
      cursor = page.next;
    }
    expect(rest.map((i) => i.key)).toEqual(["scan-c-04a", ...keys.slice(5), "scan-c-99"]);
    expect(rest.find((i) => i.key === keys[6])!.value).toEqual({ count: 2, sum: 6 });
  });

  it("answers exactly `limit` items with a cursor when there are more, and no cursor at the end", async () => {
    const keys = Array.from({ length: 7 }, (_, i) => `scan-d-${i}`);
    await produce(keys);
    const page = await scan({ prefix: "scan-d-", limit: "7" });
    expect(page.items).toHaveLength(7);
    expect(page.next).toBeNull();
    const short = await scan({ prefix: "scan-d-", limit: "6" });
    expect(short.items).toHaveLength(6);
    expect(short.next).not.toBeNull();
    expect(await scanAll({ prefix: "scan-d-", limit: "1" })).toEqual(page.items);
  });

  it("defaults to 100 items and allows at most 1000", async () => {
    const keys = Array.from({ length: 105 }, (_, i) => `scan-e-${String(i).padStart(3, "0")}`);
    await produce(keys);
    const page = await scan({ prefix: "scan-e-" });
    expect(page.items).toHaveLength(100);
    expect(page.next).not.toBeNull();
    expect((await scan({ prefix: "scan-e-", limit: "1000" })).items).toHaveLength(105);
  });

  it.each([
    ["limit=0", "limit is at least 1"],
    ["limit=1001", "limit is at most 1000"],
    ["limit=abc", "limit is a positive integer"],
    ["limit=-1", "limit is a positive integer"],
    ["limit=1.5", "limit is a positive integer"],
    ["limit=1&limit=2", "limit"],
    ["cursor=not*base64", "cursor"],
    ["cursor=_w", "cursor"],
    ["stale=yes", "stale"],
    [`prefix=${"x".repeat(16_385)}`, "prefix"],
  ])("refuses %s with 400", async (query, message) => {
    const response = await call(`/stores/totals/keys?${query}`);
    expect(response.status).toBe(400);
    const body = await json(response);
    expect(body.error).toBe("invalid_input");
    expect(body.message).toContain(message);
  });

  it("answers 404 for an unknown store", async () => {
    const response = await call("/stores/nope/keys");
    expect(response.status).toBe(404);
    expect(await json(response)).toMatchObject({ error: "not_found" });
  });

  it("answers 503 with progress while an owning task restores, then pages again", async () => {
    const keys = ["scan-f-1", "scan-f-2", "scan-f-3"];
    await produce(keys);
    const partition = partitionForKey("scan-f-1", 4);
    const active = await activeInstance(driver.instances(), `0_${partition}`);
    expect((await call("/admin/restore/pause", { method: "POST" })).status).toBe(200);
    try {
      await driver.task(active).corrupt();
      const response = await call("/stores/totals/keys?prefix=scan-f-");
      expect(response.status).toBe(503);
      expect(response.headers.get("Retry-After")).toBe("1");
      const body = await json(response);
      expect(body).toMatchObject({ error: "restoring", task: `0_${partition}` });
      expect(body.progress.restored).toBe(0);
      expect(body.progress.total).toBeGreaterThan(0);
    } finally {
      expect((await call("/admin/restore/resume", { body: {} })).status).toBe(200);
    }
    await driver.runUntilQuiet();
    expect((await scan({ prefix: "scan-f-" })).items.map((i) => i.key)).toEqual(keys);
  });
});

describe("scan cursors and merging", () => {
  it("round-trip any key, and refuse what they did not make", () => {
    for (const key of ["", "a", "a/b", "100%", "%2F", 'quote"s', "emoji 🎉", "ünï", "\uFEFFbom", "x".repeat(5000)]) {
      const cursor = encodeCursor(key);
      expect(cursor).toMatch(/^[A-Za-z0-9_-]*$/);
      expect(decodeCursor(cursor)).toBe(key);
    }
    expect(decodeCursor("a")).toBeUndefined();
    expect(decodeCursor("_w")).toBeUndefined(); // 0xFF: not UTF-8
    expect(decodeCursor("YQ==")).toBeUndefined(); // padding is not ours
  });

  it("merge pages in code point order", () => {
    const merged = mergeByKey([[{ key: "b" }, { key: "😀" }], [{ key: "a" }, { key: "\uFFFD" }], []]);
    expect(merged.map((m) => m.key)).toEqual(["a", "b", "\uFFFD", "😀"]);
  });
});
