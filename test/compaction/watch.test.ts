/**
 * A subscription's resume token after compaction (docs/subscriptions.md): with the changelog's
 * default `cleanup.policy=compact`, records after the token's offset are compacted away, so the
 * stream cannot tell which changes it would miss; it sends a fresh snapshot, marked as such, and
 * goes on from there with every later change once.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { TestDriver } from "../../platform/testing/test-driver";
import { call } from "../support/api";
import { keyOn } from "../support/keys";
import { application } from "../support/orders-app";
import { EventReader } from "../support/sse";

const driver = new TestDriver(env, application);

async function watchKey(key: string, lastId?: string): Promise<EventReader> {
  const response = await call(`/stores/totals/keys/${key}/watch`, { headers: lastId === undefined ? {} : { "Last-Event-ID": lastId } });
  expect(response.status).toBe(200);
  return new EventReader(response);
}

async function order(key: string, times: number): Promise<void> {
  for (let i = 0; i < times; i++) {
    expect((await call("/topics/orders/records", { body: { records: [{ key, value: { amount: 1 } }] } })).status).toBe(200);
    await driver.runUntilQuiet();
  }
}

describe("a resume token behind compaction", () => {
  it("gets a fresh snapshot (event: snapshot), then each later change once", async () => {
    const key = keyOn(0, "cwatch");
    await driver.instances();
    await driver.runUntilQuiet();
    const first = await watchKey(key);
    expect(JSON.parse((await first.next()).data)).toEqual({ key, value: null });
    const token = first.lastId!;
    await first.close();

    // Five commits of the key, then compaction to its end: all but its latest record go.
    await order(key, 5);
    const changelog = application.changelogPartitions("0_0")[0]!;
    const partition = env.LOG_PARTITION.getByName(`${changelog.topic}/${changelog.partition}`);
    for (let i = 0; ; i++) {
      expect(i, "compaction finishes").toBeLessThan(200);
      const result = await partition.maintain(changelog);
      if (!result.ok) throw new Error(result.failure.message);
      if (!result.value.more) break;
    }
    const kept = await partition.stats(changelog);
    if (!kept.ok) throw new Error(kept.failure.message);
    expect(kept.value.records).toBeLessThan(kept.value.latest - kept.value.earliest);

    const resumed = await watchKey(key, token);
    const snapshot = await resumed.next();
    expect(snapshot.event).toBe("snapshot");
    expect(JSON.parse(snapshot.data)).toEqual({ key, value: { count: 5, sum: 5 } });
    await order(key, 1);
    const next = await resumed.next();
    expect([next.event, JSON.parse(next.data)]).toEqual(["message", { key, value: { count: 6, sum: 6 } }]);
    await resumed.close();
  });
});
