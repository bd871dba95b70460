/**
 * Live subscriptions to a global table (docs/subscriptions.md, *Global tables*): the shop's product
 * catalog, whole in every task of the orders subtopology, each task logging every change to its own
 * changelog partition. A key's subscription follows the copy of the key's partition's task (as the
 * point read asks it), a prefix's the first task's (as a scan does): each change once, never once
 * per task.
 */
import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { application } from "../../examples/shop/app";
import { TestDriver } from "../../platform/testing/test-driver";
import { call } from "../support/api";
import { socketOf } from "../support/socket";
import { EventReader } from "../support/sse";

const driver = new TestDriver(env, application);
const product = (id: string, name: string, price: number) => ({ key: id, value: { name, category: "drinks", price } });
const data = (e: { data: string }) => JSON.parse(e.data) as { key: string; value: { price: number } | null };

async function stream(path: string): Promise<EventReader> {
  const response = await call(path);
  expect(response.status, response.status === 200 ? "" : await response.clone().text()).toBe(200);
  return new EventReader(response);
}

beforeAll(async () => {
  await driver.pipe("products", [product("w-tea", "Tea", 400), product("w-mate", "Mate", 500)]);
  await driver.runUntilQuiet();
});

describe("watching a global table", () => {
  it("sends a key's value, then each change of it once, over server-sent events and a WebSocket", async () => {
    const events = await stream("/stores/products/keys/w-tea/watch");
    expect(data(await events.next())).toEqual({ key: "w-tea", value: { name: "Tea", category: "drinks", price: 400 } });
    const socket = await socketOf(await call("/stores/products/keys/w-tea/watch", { headers: { Upgrade: "websocket" } }));
    expect((await socket.next()).data.value.price).toBe(400);
    // One partition of the catalog (the key's): in order.
    await driver.pipe("products", [product("w-tea", "Tea", 410), product("w-mate", "Mate", 510), product("w-tea", "Tea", 420)]);
    await driver.runUntilQuiet();
    expect((await events.take(2)).map((e) => data(e).value?.price)).toEqual([410, 420]);
    expect((await socket.take(2)).map((e) => e.data.value.price)).toEqual([410, 420]);
    // Nothing more: a third change shows next, not a copy of one from another task.
    await driver.pipe("products", [product("w-tea", "Tea", 430)]);
    await driver.runUntilQuiet();
    expect(data(await events.next()).value?.price).toBe(430);
    expect((await socket.next()).data.value.price).toBe(430);
    await events.close();
    socket.close();
  });

  it("sends a prefix's keys once each, then each change once, though every task holds and logs the whole table", async () => {
    const events = await stream("/stores/products/watch?prefix=w-");
    const snapshot = await events.take(3);
    expect(snapshot.map((e) => e.event)).toEqual(["message", "message", "snapshot-end"]);
    expect(snapshot.slice(0, 2).map((e) => data(e).key)).toEqual(["w-mate", "w-tea"]);
    expect(JSON.parse(snapshot[2]!.data)).toEqual({ prefix: "w-", keys: 2 });
    // One at a time: records of the catalog's partitions have no order among them.
    for (const change of [product("w-mate", "Mate", 520), product("w-cola", "Cola", 200), product("w-tea", "Tea", 440)]) {
      await driver.pipe("products", [change]);
      await driver.runUntilQuiet();
    }
    const changes = await events.take(3);
    expect(changes.map((e) => [data(e).key, data(e).value?.price])).toEqual([
      ["w-mate", 520],
      ["w-cola", 200],
      ["w-tea", 440],
    ]);
    // Resumed from the last id: nothing again, the next change once.
    const lastId = events.lastId!;
    await events.close();
    const resumed = await call("/stores/products/watch?prefix=w-", { headers: { "Last-Event-ID": lastId } });
    expect(resumed.status).toBe(200);
    const again = new EventReader(resumed);
    await driver.pipe("products", [product("w-cola", "Cola", 210)]);
    await driver.runUntilQuiet();
    expect([data(await again.next())].map((d) => [d.key, d.value?.price])).toEqual([["w-cola", 210]]);
    await again.close();
  });
});
