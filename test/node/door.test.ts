/**
 * The door's limits through the real runtime (a `wrangler dev` of the default example, where the
 * runtime's own HTTP server parses every request): a key of the largest length ingest accepts,
 * percent-encoded in `GET /stores/totals/keys/:key` at three characters per byte, is read back —
 * within Cloudflare's 16 KB URL limit too; a key one byte longer is refused at ingest; a record
 * over `MAX_INPUT_RECORD_BYTES` (in a body within `MAX_BODY_BYTES`) is 413 `record_too_large`.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MAX_INPUT_KEY_BYTES, MAX_INPUT_RECORD_BYTES, utf8Length } from "../../src/log/records";
import { startWranglerDev, until, type WranglerDev } from "./wrangler-dev";

/** Cloudflare's limit on a request's URL (developers.cloudflare.com/workers/platform/limits). */
const CLOUDFLARE_URL_BYTES = 16 * 1024;

let dev: WranglerDev;

beforeAll(async () => {
  dev = await startWranglerDev();
});

afterAll(async () => {
  await dev?.stop();
});

async function api(path: string, body?: unknown): Promise<Response> {
  return fetch(`${dev.url}${path}`, {
    method: body === undefined ? "GET" : "POST",
    headers: { Authorization: `Bearer ${dev.token}`, ...(body === undefined ? {} : { "Content-Type": "application/json" }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
}

describe("keys at the limit", () => {
  it(`reads back a ${MAX_INPUT_KEY_BYTES}-byte key percent-encoded, and refuses one byte more`, async () => {
    // Every byte non-ASCII: each takes three characters in the URL, the longest a key's path can be.
    const key = `${"é".repeat(1_000)}${"€".repeat(500)}${"😀".repeat(149)}`;
    expect(utf8Length(key)).toBe(MAX_INPUT_KEY_BYTES);
    const posted = await api("/topics/orders/records", { records: [{ key, value: { amount: 3 } }] });
    expect(posted.status, await posted.clone().text()).toBe(200);

    const path = `/stores/totals/keys/${encodeURIComponent(key)}?stale=true`;
    expect(`https://edge-streams.example.workers.dev${path}`.length).toBeLessThan(CLOUDFLARE_URL_BYTES);
    let read: Response | undefined;
    await until(
      async () => {
        read = await api(path);
        return read.status === 200;
      },
      30_000,
      "the order of the longest key to be processed",
    );
    expect(await read!.json()).toMatchObject({ key, value: { count: 1, sum: 3 } });

    const refused = await api("/topics/orders/records", { records: [{ key: `${key}x`, value: { amount: 3 } }] });
    expect(refused.status).toBe(400);
    expect(await refused.json()).toMatchObject({ error: "invalid_input", index: 0 });
  });
});

describe("records over MAX_INPUT_RECORD_BYTES", () => {
  it("are refused with 413 record_too_large naming the index, and the server keeps serving", async () => {
    const note = "x".repeat(MAX_INPUT_RECORD_BYTES);
    const response = await api("/topics/orders/records", {
      records: [
        { key: "small", value: { amount: 1 } },
        { key: "big", value: { amount: 1, note } },
      ],
    });
    expect(response.status).toBe(413);
    expect(await response.json()).toMatchObject({ error: "record_too_large", index: 1 });
    expect((await api("/topics/orders/records", { records: [{ key: "after", value: { amount: 1 } }] })).status).toBe(200);
  });
});

describe("records over MAX_INPUT_RECORD_BYTES through /kafka", () => {
  it("are refused with 413 RECORD_TOO_LARGE and nothing appended (issue #31: a 999,990-byte order once stalled its partition)", async () => {
    const basic = `Basic ${btoa(`edge:${dev.token}`)}`;
    const kafka = (path: string, body: unknown) =>
      fetch(`${dev.url}/kafka${path}`, { method: "POST", headers: { Authorization: basic, "Content-Type": "application/json" }, body: JSON.stringify(body) });
    const ends = async () => (await (await kafka("/offsets/latest", [{ topic: "orders", partition: 0 }])).json()) as { offset: number }[];
    const before = await ends();
    const refused = await kafka("/produce", { topic: "orders", partition: 0, key: "big", value: "x".repeat(999_990) });
    expect(refused.status).toBe(413);
    expect(((await refused.json()) as { code?: string }).code).toBe("RECORD_TOO_LARGE");
    expect(await ends()).toEqual(before);
    // One that leaves room for its dead letter's headers is taken.
    const fits = await kafka("/produce", { topic: "orders", partition: 0, key: "fits", value: "x".repeat(MAX_INPUT_RECORD_BYTES - 8) });
    expect(fits.status, await fits.clone().text()).toBe(200);
  });
});

describe("bad requests of every kind (issue #30's list), against the real runtime", () => {
  it("each gets its status and a plain message, nothing is appended, and the server keeps serving", async () => {
    const auth = { Authorization: `Bearer ${dev.token}` };
    const send = (path: string, init: RequestInit) => fetch(`${dev.url}${path}`, { ...init, headers: { ...auth, ...(init.headers ?? {}) } });
    const json = (records: unknown) => ({ method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ records }) });
    const ends = async () => {
      const topic = (await (await send("/topics/orders", {})).json()) as { partitions: { partition: number; latest: number }[] };
      return topic.partitions.map((p) => p.latest);
    };
    const before = await ends();

    const cases: { what: string; path: string; init: RequestInit; status: number; error: string; index?: number; message?: RegExp }[] = [
      {
        what: "no JSON content type",
        path: "/topics/orders/records",
        init: { method: "POST", body: JSON.stringify({ records: [{ key: "a", value: { amount: 1 } }] }) },
        status: 415,
        error: "unsupported_media_type",
      },
      {
        what: "a form body",
        path: "/topics/orders/records",
        init: { method: "POST", headers: { "Content-Type": "application/x-www-form-urlencoded" }, body: "records=1" },
        status: 415,
        error: "unsupported_media_type",
      },
      {
        what: "a wrong method",
        path: "/topics/orders/records",
        init: { method: "PUT", headers: { "Content-Type": "application/json" }, body: "{}" },
        status: 405,
        error: "method_not_allowed",
      },
      {
        what: "JSON that does not parse",
        path: "/topics/orders/records",
        init: { method: "POST", headers: { "Content-Type": "application/json" }, body: "{" },
        status: 400,
        error: "invalid_input",
      },
      {
        what: "an order that is not a number",
        path: "/topics/orders/records",
        init: json([
          { key: "ok", value: { amount: 1 } },
          { key: "alice", value: "abc" },
        ]),
        status: 400,
        error: "InvalidRecord",
        index: 1,
      },
      {
        what: "an amount past the bound",
        path: "/topics/orders/records",
        init: json([{ key: "alice", value: { amount: 1e308 } }]),
        status: 400,
        error: "InvalidRecord",
        index: 0,
      },
      {
        what: "an empty key",
        path: "/topics/orders/records",
        init: json([{ key: "", value: { amount: 1 } }]),
        status: 400,
        error: "invalid_input",
        index: 0,
        message: /^records\[0\]\.key: /,
      },
      {
        what: "a partition out of range",
        path: "/topics/orders/records",
        init: json([{ key: "a", value: { amount: 1 }, partition: 99 }]),
        status: 400,
        error: "invalid_input",
        message: /^records\[0\]\.partition: /,
      },
      { what: "an unknown topic", path: "/topics/no-such-topic/records", init: json([{ key: "a", value: 1 }]), status: 404, error: "unknown_topic" },
      { what: "an output topic", path: "/topics/totals/records", init: json([{ key: "a", value: { count: 1, sum: 1 } }]), status: 403, error: "forbidden" },
    ];
    for (const c of cases) {
      const response = await send(c.path, c.init);
      const body = (await response.json()) as { error?: string; message?: string; index?: number };
      expect(response.status, `${c.what}: ${JSON.stringify(body)}`).toBe(c.status);
      expect(body.error, c.what).toBe(c.error);
      expect(typeof body.message, c.what).toBe("string");
      if (c.index !== undefined) expect(body.index, c.what).toBe(c.index);
      if (c.message) expect(body.message, c.what).toMatch(c.message);
      if (c.status === 405) expect(response.headers.get("Allow"), c.what).toContain("POST");
    }
    expect(await ends()).toEqual(before);

    // Still serving: a good order is taken and read back.
    const good = await send("/topics/orders/records", json([{ key: "after-bad-requests", value: { amount: 4 } }]));
    expect(good.status, await good.clone().text()).toBe(200);
    await until(async () => (await send("/stores/totals/keys/after-bad-requests", {})).status === 200, 30_000, "the good order to be processed");
  });
});
