/**
 * Against a real `wrangler dev` with wrangler.toml's `FAULT_INJECTION = "off"` (no `--var`): the
 * fault routes do not exist (404, even with the token and a valid body) and change nothing, and
 * the Worker's own log lines never carry the token.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startWranglerDev, until, type WranglerDev } from "./wrangler-dev";

let dev: WranglerDev;

beforeAll(async () => {
  dev = await startWranglerDev();
});

afterAll(async () => {
  await dev?.stop();
});

async function api(path: string, init: { method?: string; body?: unknown; token?: string | null } = {}) {
  const headers: Record<string, string> = {};
  const token = init.token === undefined ? dev.token : init.token;
  if (token !== null) headers.Authorization = `Bearer ${token}`;
  if (init.body !== undefined) headers["Content-Type"] = "application/json";
  return fetch(`${dev.url}${path}`, {
    method: init.method ?? (init.body === undefined ? "GET" : "POST"),
    headers,
    body: init.body === undefined ? undefined : JSON.stringify(init.body),
  });
}

type Task = { id: string; placement: string; role: string; state: string; epoch: number; incarnation: number };

async function tasks(): Promise<Task[]> {
  const response = await api("/tasks");
  expect(response.status).toBe(200);
  const { tasks } = (await response.json()) as { tasks: Task[] };
  return tasks.map(({ id, placement, role, state, epoch, incarnation }) => ({ id, placement, role, state, epoch, incarnation }));
}

describe("fault routes with FAULT_INJECTION off", () => {
  it("answer 404 and change nothing", async () => {
    await until(async () => (await tasks()).filter((t) => t.state === "RUNNING").length === 4, 30_000, "four running tasks");
    const before = await tasks();
    for (const [path, body] of [
      ["/admin/tasks/0_0/corrupt", undefined],
      ["/admin/tasks/0_1/crash", undefined],
      ["/admin/log/fail", { topic: "orders", partition: 0, times: 5 }],
      ["/admin/wakes/drop", { seconds: 5 }],
      ["/admin/coordinator/fail", { seconds: 60 }],
    ] as const) {
      const response = await api(path, { method: "POST", body });
      expect(response.status, path).toBe(404);
      const text = await response.text();
      expect(JSON.parse(text)).toMatchObject({ error: "not_found" });
      expect(text).not.toContain(dev.token);
    }
    expect(await tasks()).toEqual(before);
    // The coordinator was not told to fail: it still moves tasks.
    const moved = await api("/admin/tasks/0_0/migrate", { body: { to: before.find((t) => t.id === "0_0" && t.role === "active")!.placement } });
    expect(moved.status).toBe(200);
    // The log was not told to fail: an append to partition 0 succeeds at once.
    const ingest = await api("/topics/orders/records", { body: { records: [{ key: "fault-off", value: { amount: 1 }, partition: 0 }] } });
    expect(ingest.status).toBe(200);
  });

  it("keep the token out of the Worker's log lines", async () => {
    await api("/tasks", { token: "wrong-token" });
    const lines = dev
      .output()
      .split("\n")
      .filter((line) => line.trimStart().startsWith("{"));
    expect(lines.some((line) => line.includes('"event":"task.'))).toBe(true);
    expect(lines.filter((line) => line.includes(dev.token))).toEqual([]);
  });
});
