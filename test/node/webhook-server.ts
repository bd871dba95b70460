/**
 * The webhook endpoint of the `queues` and `connectors` projects (their globalSetup, in Node: here, where Node's types are):
 * a real HTTP server on 127.0.0.1, one per project on the port vitest.config.ts chose for it, that the Worker's webhook sink POSTs to. It keeps every request it got (time,
 * headers, body) and answers 200, or what `POST /control` tells it for the partitions named there;
 * the tests read `GET /received` and reset with `POST /reset` from inside workerd.
 */
import { createServer, type IncomingMessage } from "node:http";

declare const process: { env: Record<string, string | undefined> };

interface Received {
  readonly at: number;
  readonly headers: Record<string, string>;
  readonly body: string;
  readonly status: number;
}

const read = (request: IncomingMessage) =>
  new Promise<string>((resolve, reject) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    request.on("error", reject);
  });

export default async function setup(project: { name: string }): Promise<() => Promise<void>> {
  const port = (JSON.parse(process.env.EDGE_STREAMS_WEBHOOK_PORTS ?? "{}") as Record<string, number>)[project.name];
  if (port === undefined) throw new Error(`no webhook port for the project ${project.name} (vitest.config.ts: WEBHOOK_PORTS)`);
  let received: Received[] = [];
  /** Partition → status to answer for it (a failing endpoint for that partition's batches). */
  let failing = new Map<number, number>();
  const server = createServer(async (request, response) => {
    const body = await read(request);
    const reply = (status: number, json: unknown) => {
      response.writeHead(status, { "content-type": "application/json" });
      response.end(JSON.stringify(json));
    };
    if (request.url === "/received") return reply(200, received);
    if (request.url === "/reset") {
      received = [];
      failing = new Map();
      return reply(200, {});
    }
    if (request.url === "/control") {
      const { partition, status } = JSON.parse(body) as { partition: number; status: number | null };
      if (status === null) failing.delete(partition);
      else failing.set(partition, status);
      return reply(200, {});
    }
    const partition = (JSON.parse(body) as { records: { partition: number }[] }).records[0]?.partition ?? -1;
    const status = failing.get(partition) ?? 200;
    received.push({ at: Date.now(), headers: request.headers as Record<string, string>, body, status });
    reply(status, status === 200 ? { ok: true } : { error: "failing on purpose" });
  });
  await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve));
  return () => new Promise<void>((resolve) => server.close(() => resolve()));
}
