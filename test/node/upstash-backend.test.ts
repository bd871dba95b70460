/**
 * The example application on `LOG_BACKEND=upstash`: its log is another `wrangler dev`'s `/kafka`
 * endpoint, reached with the real `@upstash/kafka` client. A remote log sends no wake-ups, so its
 * tasks poll their input and its restore workers their changelogs: orders in, totals exact, and
 * a corrupted task restores from the remote changelog. The app authenticates with the log
 * deployment's runtime credential (its LOG_TOKEN): its tasks send their producer identities and
 * group epochs, which the log deployment takes from that credential only — not from its API token.
 */
import { Kafka, UpstashError } from "@upstash/kafka";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { kafkaHttpLayer } from "../../src/kafka-rest/upstash-log";
import { startWranglerDev, until, type WranglerDev } from "./wrangler-dev";

let log: WranglerDev;
let app: WranglerDev;
/** The log deployment's runtime credential, which the app deployment uses as its Upstash password. */
const LOG_TOKEN = `node-runtime-${Math.random().toString(36).slice(2)}`;

beforeAll(async () => {
  // The log: a deployment nobody asks for its own tasks (only its /kafka endpoint is used).
  log = await startWranglerDev({ vars: { LOG_TOKEN } });
  app = await startWranglerDev({
    vars: {
      FAULT_INJECTION: "on",
      LOG_BACKEND: "upstash",
      UPSTASH_KAFKA_REST_URL: `${log.url}/kafka`,
      UPSTASH_KAFKA_REST_USERNAME: "edge",
      UPSTASH_KAFKA_REST_PASSWORD: LOG_TOKEN,
    },
  });
}, 240_000);

afterAll(async () => {
  await app?.stop();
  await log?.stop();
});

async function api(path: string, body?: unknown): Promise<Response> {
  const headers: Record<string, string> = { Authorization: `Bearer ${app.token}` };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  return fetch(`${app.url}${path}`, { method: body === undefined ? "GET" : "POST", headers, body: body === undefined ? undefined : JSON.stringify(body) });
}

type Task = { id: string; role: string; state: string; lag: number; incarnation: number };
const tasks = async () => ((await (await api("/tasks")).json()) as { tasks: Task[] }).tasks;
const caughtUp = async () => {
  const actives = (await tasks()).filter((t) => t.role === "active");
  return actives.length === 4 && actives.every((t) => t.state === "RUNNING" && t.lag === 0);
};

describe("LOG_BACKEND=upstash against another deployment's /kafka", () => {
  it("processes orders into exact totals, polling the remote log, and restores a corrupted task from it", async () => {
    const keys = Array.from({ length: 8 }, (_, i) => `remote-${i}`);
    for (const amount of [2, 3]) {
      const response = await api("/topics/orders/records", { records: keys.map((key) => ({ key, value: { amount } })) });
      expect(response.status, await response.clone().text()).toBe(200);
    }
    await until(caughtUp, 60_000, "the orders to be processed through the remote log");
    for (const key of keys) {
      const response = await api(`/stores/totals/keys/${key}`);
      expect(response.status, await response.clone().text()).toBe(200);
      expect(((await response.json()) as { value: unknown }).value).toEqual({ count: 2, sum: 5 });
    }

    const before = (await tasks()).find((t) => t.id === "0_0" && t.role === "active")!;
    expect((await api("/admin/tasks/0_0/corrupt", {})).status).toBe(200);
    await api("/topics/orders/records", { records: keys.map((key) => ({ key, value: { amount: 4 } })) });
    await until(
      async () => ((await tasks()).find((t) => t.id === "0_0" && t.role === "active")?.incarnation ?? 0) > before.incarnation && (await caughtUp()),
      60_000,
      "the wiped task to restore from the remote changelog",
    );
    for (const key of keys) expect(((await (await api(`/stores/totals/keys/${key}`)).json()) as { value: unknown }).value).toEqual({ count: 3, sum: 9 });
  });

  it("takes the tasks' identities from the runtime's credential only: the log deployment's own API token may not send them (403)", async () => {
    const layer = kafkaHttpLayer(new Kafka({ url: `${log.url}/kafka`, username: "edge", password: log.token }))!;
    const refused = async (path: string[], body: unknown) => {
      const error = await layer.post({ path, body, retries: 0 }).then(
        () => null,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(UpstashError);
      expect((error as UpstashError).status).toBe(403);
    };
    await refused(
      ["produce"],
      [{ topic: "orders", partition: 0, value: '{"amount":1}', headers: [{ key: "edge-producer", value: "edge-streams-0_0;999999999;0" }] }],
    );
    await refused(["produce"], [{ topic: "edge-streams-totals-changelog", partition: 0, key: "remote-0", value: '{"count":9,"sum":9}' }]);
    await refused(["commit", "edge-streams", "edge-epoch-999999999"], { topic: "orders", partition: 0, offset: 0 });
    // The app's tasks, unfenced, go on: another order is processed exactly.
    await api("/topics/orders/records", { records: [{ key: "remote-0", value: { amount: 1 } }] });
    await until(caughtUp, 60_000, "the order to be processed");
    expect(((await (await api("/stores/totals/keys/remote-0")).json()) as { value: unknown }).value).toEqual({ count: 4, sum: 10 });
  });
});
