/**
 * The runtime's identities are the runtime's alone (issue #31, findings 1 and 2), in workerd:
 * the tasks' producer header, the topics the application writes (changelogs, outputs, dead
 * letters) and its consumer group's commits are refused from outside (403) at every entry and
 * whatever the token, the all-powerful API token included; only the runtime's own credential
 * (LOG_TOKEN, another deployment whose log is this one's `/kafka`) passes, and the log still fences
 * it. After each attempt the application is exact: no task fenced or failed, the stores untouched,
 * its commits going on. A client's own idempotent producer works under ids of its own.
 * The same against a real `wrangler dev` with the real client: test/node/security.test.ts.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { ordersTotalsTopology } from "../examples/orders-totals/topology";
import { Application } from "../src/application";
import { TopologyError } from "../src/streams/errors";
import type { TaskDescription } from "../src/task/describe";
import { TestDriver } from "../platform/testing/test-driver";
import { BASIC, endOffsets, failure, kafka, LOG_BASIC, ok } from "./kafka-rest/support";
import { call, json, TOKEN } from "./support/api";
import { keysOn } from "./support/keys";
import { application, DEAD_LETTER_TOPIC } from "./support/orders-app";
import { activeInstance } from "./support/active";
import { TEST_TOKENS } from "./support/tokens";

const driver = new TestDriver(env, application);
const CHANGELOG = "edge-streams-totals-changelog";
const GROUP = "edge-streams";
const basic = (token: string) => `Basic ${btoa(`edge:${token}`)}`;
/** Credentials a client may hold (vitest.config.ts): none of them is the runtime's. */
const CLIENTS = { api: BASIC, produce: basic(TEST_TOKENS.produce), read: basic(TEST_TOKENS.read), admin: basic(TEST_TOKENS.admin) };

/** Every end offset a refused write must leave as it was. */
async function ends() {
  const topics = ["orders", "totals", CHANGELOG];
  return Object.fromEntries(await Promise.all(topics.map(async (t) => [t, await endOffsets(t, 4)] as const)));
}

async function committed(group: string): Promise<number[]> {
  const tps = Array.from({ length: 4 }, (_, partition) => ({ topic: "orders", partition }));
  return (await ok<{ offset: number }[]>(kafka(`/committed/${group}/reader`, { body: tps }))).map((o) => o.offset);
}

/** Every active instance RUNNING, none stopped (fenced or failed), none behind. */
async function expectExact(): Promise<TaskDescription[]> {
  const actives = (await driver.instances()).filter((i) => i.role === "active");
  const described = (await Promise.all(actives.map((i) => driver.task(i).describe()))) as TaskDescription[];
  for (const task of described) expect(task, task.id).toMatchObject({ state: "RUNNING", failure: null, lag: 0 });
  return described;
}

describe("finding 1: the runtime's producer header, from outside", () => {
  it("is refused (403) at every entry and with every client token; task 0_0 is not fenced and its totals stay exact through a migration", async () => {
    const [a, b] = keysOn(0, 2, "forged");
    await driver.pipe("orders", [{ key: a!, value: { amount: 2 } }]);
    await driver.runUntilQuiet();
    const before = await ends();
    const tasksBefore = await expectExact();
    const fencing = [{ key: "edge-producer", value: "edge-streams-0_0;9007199254740991;0" }];
    const attacker = [{ key: "edge-producer", value: "edge-streams-attacker;0;0" }];

    for (const [who, auth] of Object.entries(CLIENTS)) {
      const refused = async (path: string, body: unknown) => {
        const answer = await failure(kafka(path, { body, auth }), 403);
        if (who === "api" || who === "produce") expect(answer.error, `${who} ${path}`).toMatch(/edge-producer|written by|internal/);
      };
      await refused("/produce", { topic: "totals", partition: 0, key: a, value: "x", headers: fencing });
      await refused("/produce", { topic: "orders", partition: 0, key: a, value: '{"amount":1}', headers: fencing });
      await refused("/produce", [
        { topic: "orders", value: '{"amount":1}', key: b },
        { topic: CHANGELOG, partition: 0, key: a, value: '{"count":99,"sum":99}', headers: attacker },
      ]);
      await refused("/produce/orders", { value: '{"amount":1}', key: a, headers: fencing });
      await refused(`/produce/${CHANGELOG}`, [{ value: "not json", key: a, partition: 0, headers: attacker }]);
    }
    for (const token of [TOKEN, TEST_TOKENS.produce]) {
      const response = await call("/topics/orders/records", { body: { records: [{ key: a, value: { amount: 1 }, headers: fencing }] }, token });
      expect(response.status).toBe(403);
      expect(await json(response)).toMatchObject({ error: "forbidden", message: expect.stringContaining("edge-producer") });
    }
    expect(await ends()).toEqual(before);

    // The next order for the key is processed by the same instance, unfenced, exactly.
    await driver.pipe("orders", [{ key: a!, value: { amount: 3 } }]);
    await driver.runUntilQuiet();
    const tasksAfter = await expectExact();
    expect(tasksAfter.map((t) => [t.id, t.epoch])).toEqual(tasksBefore.map((t) => [t.id, t.epoch]));
    expect(await driver.get("totals", a!)).toEqual({ count: 2, sum: 5 });

    // A routine migration restores from the changelog: nothing foreign in it.
    const active = await activeInstance(driver.instances(), "0_0");
    const moved = await call("/admin/tasks/0_0/migrate", { body: { to: active.placement === "a" ? "b" : "a" } });
    expect(moved.status, await moved.clone().text()).toBe(200);
    await driver.runUntilQuiet();
    await expectExact();
    const read = await call(`/stores/totals/keys/${a}`);
    expect(await json(read)).toMatchObject({ key: a, value: { count: 2, sum: 5 } });
    expect((await call("/stores/totals/keys?limit=1000")).status).toBe(200);
  });

  it("passes with the runtime's credential only, and the log still fences it by epoch", async () => {
    const id = `edge-streams-runtime-${crypto.randomUUID().slice(0, 8)}`;
    const produce = (epoch: number, value: string) =>
      kafka("/produce", {
        body: { topic: "ingest-test", partition: 0, value, headers: [{ key: "edge-producer", value: `${id};${epoch};0` }] },
        auth: LOG_BASIC,
      });
    await ok(produce(2, "new"));
    expect(await failure(produce(1, "zombie"), 409)).toMatchObject({ code: "PRODUCER_FENCED" });
  });
});

describe("the topics the application writes", () => {
  it("are its changelogs, outputs and dead letters", () => {
    expect([...application.writtenTopics].sort()).toEqual([CHANGELOG, DEAD_LETTER_TOPIC, "totals"].sort());
  });

  it("refuse writes from outside (403) through /topics and /kafka with any client token, appending nothing; the runtime's credential may", async () => {
    const before = await ends();
    const dead = await endOffsets(DEAD_LETTER_TOPIC, 1);
    for (const topic of ["totals", DEAD_LETTER_TOPIC]) {
      for (const token of [TOKEN, TEST_TOKENS.produce]) {
        const response = await call(`/topics/${topic}/records`, { body: { records: [{ key: "k", value: { count: 1, sum: 1 }, partition: 0 }] }, token });
        expect(response.status, topic).toBe(403);
        expect(await json(response)).toMatchObject({ error: "forbidden", message: expect.stringContaining("openTopics") });
        await failure(kafka("/produce", { body: { topic, partition: 0, value: "v" }, auth: basic(token) }), 403);
        await failure(kafka(`/produce/${topic}`, { body: { partition: 0, value: "v" }, auth: basic(token) }), 403);
      }
    }
    expect(await ends()).toEqual(before);
    expect(await endOffsets(DEAD_LETTER_TOPIC, 1)).toEqual(dead);
    await ok(kafka(`/produce/${DEAD_LETTER_TOPIC}`, { body: { partition: 0, value: "a runtime's dead letter" }, auth: LOG_BASIC }));
    expect((await endOffsets(DEAD_LETTER_TOPIC, 1))[0]).toBe(dead[0]! + 1);
  });

  it("can be declared open (ApplicationOptions.openTopics), never a changelog or repartition topic", () => {
    const topology = ordersTotalsTopology({ deadLetterTopic: DEAD_LETTER_TOPIC });
    const open = new Application(topology, { openTopics: ["totals"] });
    expect(open.writtenTopics.has("totals")).toBe(false);
    expect(open.writtenTopics.has(DEAD_LETTER_TOPIC)).toBe(true);
    expect(open.writtenTopics.has(CHANGELOG)).toBe(true);
    expect(() => new Application(topology, { openTopics: [CHANGELOG] })).toThrow(TopologyError);
    expect(() => new Application(topology, { openTopics: ["no-such-topic"] })).toThrow(/not a topic/);
  });
});

describe("finding 2: the application's consumer group, from outside", () => {
  it("refuses a commit (403) whatever instance id it names and whatever client token; the tasks' commits go on, unfenced", async () => {
    const keys = keysOn(1, 3, "group-forgery");
    await driver.pipe(
      "orders",
      keys.map((key) => ({ key, value: { amount: 1 } })),
    );
    await driver.runUntilQuiet();
    const before = await committed(GROUP);
    expect(before[1]).toBeGreaterThan(0);
    for (const auth of Object.values(CLIENTS)) {
      for (const instance of ["edge-epoch-9007199254740991", "edge-epoch-0", "outsider"]) {
        await failure(kafka(`/commit/${GROUP}/${instance}`, { body: { topic: "orders", partition: 1, offset: 0 }, auth }), 403);
        await failure(kafka(`/commit/${GROUP}/${instance}`, { method: "POST", auth }), 403);
      }
    }
    expect(await committed(GROUP)).toEqual(before);

    await driver.pipe(
      "orders",
      keys.map((key) => ({ key, value: { amount: 2 } })),
    );
    await driver.runUntilQuiet();
    await expectExact();
    expect((await committed(GROUP))[1]).toBe((await endOffsets("orders", 4))[1]);
    for (const key of keys) expect(await driver.get("totals", key)).toEqual({ count: 2, sum: 3 });
  });

  it("takes the runtime's commits only with an epoch, which the log fences (an older one is refused)", async () => {
    const before = await committed(GROUP);
    await failure(kafka(`/commit/${GROUP}/outsider`, { body: { topic: "orders", partition: 1, offset: 0 }, auth: LOG_BASIC }), 403);
    const fenced = await failure(kafka(`/commit/${GROUP}/edge-epoch-0`, { body: { topic: "orders", partition: 1, offset: 0 }, auth: LOG_BASIC }), 409);
    expect(fenced.code).toBe("PRODUCER_FENCED");
    expect(await committed(GROUP)).toEqual(before);
  });
});

describe("a client's own idempotent producer", () => {
  it("is an Idempotency-Key on /kafka/produce (producer ingest:<key>): a retry appends nothing and answers the same offsets; another body is 409", async () => {
    const headers = { "Idempotency-Key": `kafka-client-${crypto.randomUUID()}` };
    const body = [
      { topic: "ingest-test", key: "idem-a", value: "a" },
      { topic: "ingest-test", value: "keyless" },
      { topic: "ingest-test", key: "idem-b", value: "b" },
    ];
    const first = await ok<{ partition: number; offset: number; duplicate: boolean }[]>(kafka("/produce", { body, headers, auth: basic(TEST_TOKENS.produce) }));
    expect(first.every((m) => !m.duplicate)).toBe(true);
    const before = await endOffsets("ingest-test", 4);
    const retry = await ok<{ partition: number; offset: number; duplicate: boolean }[]>(kafka("/produce", { body, headers, auth: basic(TEST_TOKENS.produce) }));
    expect(retry.map((m) => [m.partition, m.offset, m.duplicate])).toEqual(first.map((m) => [m.partition, m.offset, true]));
    expect(await endOffsets("ingest-test", 4)).toEqual(before);
    const other = await failure(kafka("/produce", { body: [{ ...body[0]!, value: "changed" }], headers }), 409);
    expect(other.code).toBe("DUPLICATE_SEQUENCE_MISMATCH");
    expect(await endOffsets("ingest-test", 4)).toEqual(before);
  });
});
