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
