/**
 * Request bodies over MAX_BODY_BYTES against a real `wrangler dev`: refused with 413 — chunked
 * (no Content-Length) or with a Content-Length, on the API routes and on `/kafka` — and the
 * server keeps serving afterwards: `/healthz` and ordinary POSTs answer promptly, on new
 * connections and on the connection that carried the refused body.
 */
import { request, Agent, type IncomingMessage } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startWranglerDev, type WranglerDev } from "./wrangler-dev";

const MAX_BODY_BYTES = 65_536;
/** How long any one answer may take here: a wedged server shows as a timeout, not a hang. */
const ANSWER_MS = 15_000;

let dev: WranglerDev;

beforeAll(async () => {
  dev = await startWranglerDev({ vars: { MAX_BODY_BYTES: String(MAX_BODY_BYTES) }, topics: { "body-limits": 1 } });
});

afterAll(async () => {
  await dev?.stop();
});

interface Answer {
  readonly status: number;
  readonly body: string;
}

interface Send {
  readonly method?: string;
  readonly path: string;
  readonly headers?: Record<string, string>;
  /** Written in this order; with `chunked`, without a Content-Length. */
  readonly chunks?: readonly (string | Buffer)[];
  readonly chunked?: boolean;
  readonly agent?: Agent | false;
}

/**
 * One request with node's http module, answered within ANSWER_MS or failed. A server may answer
 * (and close) before the whole body is written: write errors after that are expected and ignored.
 */
function send(options: Send): Promise<Answer> {
  return new Promise<Answer>((resolve, reject) => {
    const url = new URL(options.path, dev.url);
    const headers: Record<string, string> = { ...options.headers };
    const chunks = options.chunks ?? [];
    if (options.chunked) headers["Transfer-Encoding"] = "chunked";
    else if (chunks.length > 0) headers["Content-Length"] = String(chunks.reduce((n, c) => n + Buffer.byteLength(c), 0));
    const req = request(url, { method: options.method ?? (chunks.length ? "POST" : "GET"), headers, agent: options.agent ?? false });
    const timer = setTimeout(() => {
      req.destroy(new Error(`no answer to ${options.method ?? "GET"} ${options.path} within ${ANSWER_MS} ms`));
    }, ANSWER_MS);
    req.on("error", (error) => {
      clearTimeout(timer);
      reject(error);
    });
    req.on("response", (res: IncomingMessage) => {
      const parts: Buffer[] = [];
      res.on("data", (part: Buffer) => parts.push(part));
      res.on("end", () => {
        clearTimeout(timer);
        resolve({ status: res.statusCode ?? 0, body: Buffer.concat(parts).toString() });
      });
      res.on("error", (error) => {
        clearTimeout(timer);
        reject(error);
      });
    });
    const write = (i: number) => {
      if (i >= chunks.length || req.destroyed) return void req.end();
      req.write(chunks[i]!, (error) => (error ? undefined : write(i + 1)));
    };
    write(0);
  });
}

const bearer = () => ({ Authorization: `Bearer ${dev.token}`, "Content-Type": "application/json" });
const basic = () => ({ Authorization: `Basic ${Buffer.from(`edge:${dev.token}`).toString("base64")}`, "Content-Type": "application/json" });

/** An ingest body of about `bytes` bytes, in 16 KiB chunks. */
function ingestChunks(bytes: number): string[] {
  const text = JSON.stringify({ records: [{ key: "big", value: "x".repeat(bytes) }] });
  const chunks: string[] = [];
  for (let i = 0; i < text.length; i += 16_384) chunks.push(text.slice(i, i + 16_384));
  return chunks;
}

function kafkaChunks(bytes: number): string[] {
  const text = JSON.stringify({ topic: "body-limits", value: "x".repeat(bytes), partition: 0 });
  const chunks: string[] = [];
  for (let i = 0; i < text.length; i += 16_384) chunks.push(text.slice(i, i + 16_384));
  return chunks;
}

/** The server still serves: a health check and an ordinary append, each on a new connection. */
async function expectServing(): Promise<void> {
  const health = await send({ path: "/healthz" });
  expect(health.status).toBe(200);
  const small = await send({ path: "/topics/body-limits/records", headers: bearer(), chunks: [JSON.stringify({ records: [{ key: "small", value: 1 }] })] });
  expect(small.status, small.body).toBe(200);
  expect(JSON.parse(small.body)).toMatchObject({ offsets: [{ partition: 0 }] });
}

describe("a body over MAX_BODY_BYTES", () => {
  it("sent chunked without Content-Length: 413, and the server goes on serving", async () => {
    const refused = await send({ path: "/topics/body-limits/records", headers: bearer(), chunks: ingestChunks(4 * MAX_BODY_BYTES), chunked: true });
    expect(refused.status, refused.body).toBe(413);
    expect(JSON.parse(refused.body)).toMatchObject({ error: "too_large" });
    await expectServing();
  });

  it("several in a row, chunked: every one 413, and the server goes on serving", async () => {
    for (let i = 0; i < 4; i++) {
      const refused = await send({ path: "/topics/body-limits/records", headers: bearer(), chunks: ingestChunks(2 * MAX_BODY_BYTES), chunked: true });
      expect(refused.status, refused.body).toBe(413);
    }
    await expectServing();
  });

  it("with a Content-Length: 413, and the server goes on serving", async () => {
    const refused = await send({ path: "/topics/body-limits/records", headers: bearer(), chunks: ingestChunks(4 * MAX_BODY_BYTES) });
    expect(refused.status, refused.body).toBe(413);
    expect(JSON.parse(refused.body)).toMatchObject({ error: "too_large" });
    await expectServing();
  });

  it("to /kafka/produce, chunked and with a Content-Length: 413 in the dialect's shape, and the server goes on serving", async () => {
    for (const chunked of [true, false]) {
      const refused = await send({ path: "/kafka/produce", headers: basic(), chunks: kafkaChunks(4 * MAX_BODY_BYTES), chunked });
      expect(refused.status, refused.body).toBe(413);
      expect(JSON.parse(refused.body)).toMatchObject({ status: 413 });
      await expectServing();
    }
  });

  it("on a kept-alive connection: the connection's next request is answered too", async () => {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const refused = await send({ path: "/topics/body-limits/records", headers: bearer(), chunks: ingestChunks(4 * MAX_BODY_BYTES), chunked: true, agent });
      expect(refused.status, refused.body).toBe(413);
      const health = await send({ path: "/healthz", agent });
      expect(health.status).toBe(200);
      const small = await send({
        path: "/topics/body-limits/records",
        headers: bearer(),
        chunks: [JSON.stringify({ records: [{ key: "again", value: 1 }] })],
        agent,
      });
      expect(small.status, small.body).toBe(200);
    } finally {
      agent.destroy();
    }
  });

  it("a body just under the limit, chunked, is accepted", async () => {
    const accepted = await send({ path: "/topics/body-limits/records", headers: bearer(), chunks: ingestChunks(MAX_BODY_BYTES - 1_000), chunked: true });
    expect(accepted.status, accepted.body).toBe(200);
    await expectServing();
  });
});
