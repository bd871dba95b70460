/**
 * The `/kafka` endpoint (Upstash Kafka REST dialect) inside workerd: every call, auth, validation,
 * idempotence and fencing through the `edge-producer` header, and consumer groups.
 * Tests share the `orders` topic, so they compare offsets with what was there before.
 */
import { MAX_RECORD_BYTES } from "../src/log/records";
import { env } from "cloudflare:workers";
import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { groupObjectName } from "../src/names";
import { ConsumerGroupCoordinator } from "../src/consumer-group/group";
import { DurableLog } from "../src/log/durable-log";
import { partitionForKey } from "../src/log/partitioner";
import { TopicCatalog } from "../src/log/topics";
import { endOffsets, failure, kafka, LOG_BASIC, ok } from "./kafka-rest/support";
import { TOKEN } from "./support/api";

const run = crypto.randomUUID().slice(0, 8);
const ORDERS = 4;
type Meta = { topic: string; partition: number; offset: number; timestamp: number; duplicate: boolean };
type Msg = {
  topic: string;
  partition: number;
  offset: number;
  timestamp: number;
  key: string | null;
  value: string;
  headers: { key: string; value: string }[];
};

const fetchOne = async (partition: number, offset: number) => (await ok<Msg[]>(kafka("/fetch", { body: { topic: "orders", partition, offset } })))[0];

describe("/kafka auth", () => {
  it("refuses missing, wrong and bearer credentials with 401 in the dialect's shape, inviting no browser to ask for a password", async () => {
    for (const auth of [null, `Basic ${btoa("edge:wrong")}`, `Basic ${btoa(`admin:${TOKEN}`)}`, `Bearer ${TOKEN}`, "Basic %%%"]) {
      const response = await kafka("/topics", { auth });
      // `WWW-Authenticate: Basic` would make a browser prompt, then attach the credentials to requests from any site.
      expect(response.headers.get("WWW-Authenticate")).toBeNull();
      await failure(response, 401);
    }
  });

  it("refuses before reading anything: a refused produce appends nothing", async () => {
    const before = await endOffsets("orders", ORDERS);
    await failure(kafka("/produce", { body: { topic: "orders", value: "x", partition: 0 }, auth: null }), 401);
    expect(await endOffsets("orders", ORDERS)).toEqual(before);
  });

  it("answers unknown /kafka routes with a dialect 404", async () => {
    expect((await failure(kafka("/nope"), 404)).error).toMatch(/no route/);
  });
});

describe("GET /kafka/topics", () => {
  it("maps each topic to its partition count", async () => {
    const topics = await ok<Record<string, number>>(kafka("/topics"));
    expect(topics).toMatchObject({ orders: 4 });
  });
});

describe("POST /kafka/produce", () => {
  it("produces one message, answering a list, and routes by key with Kafka's partitioner", async () => {
    const [meta, ...rest] = await ok<Meta[]>(
      kafka("/produce", { body: { topic: "orders", key: `alice-${run}`, value: "v1", headers: [{ key: "h", value: "1" }], timestamp: 1234 } }),
    );
    expect(rest).toEqual([]);
    expect(meta).toMatchObject({ topic: "orders", partition: partitionForKey(`alice-${run}`, ORDERS), timestamp: 1234, duplicate: false });
    expect(await fetchOne(meta!.partition, meta!.offset)).toEqual({
      topic: "orders",
      partition: meta!.partition,
      offset: meta!.offset,
      timestamp: 1234,
      key: `alice-${run}`,
      value: "v1",
      headers: [{ key: "h", value: "1" }],
    });
  });

  it("produces many to several topics, answering in request order with dense offsets per partition", async () => {
    const before = await endOffsets("orders", ORDERS);
    const body = [
      { topic: "orders", value: "a", partition: 2 },
      { topic: "orders", value: "b", partition: 1 },
      { topic: "orders", value: "c", partition: 2 },
      { topic: "orders", value: "d", key: "k", partition: 2 },
    ];
    const metas = await ok<Meta[]>(kafka("/produce", { body }));
    expect(metas.map((m) => [m.partition, m.offset])).toEqual([
      [2, before[2]],
      [1, before[1]],
      [2, before[2]! + 1],
      [2, before[2]! + 2],
    ]);
    const after = await endOffsets("orders", ORDERS);
    expect(after[2]).toBe(before[2]! + 3);
  });

  it("puts a request's keyless messages on one partition, stamped with the append time", async () => {
    const started = Date.now();
    const metas = await ok<Meta[]>(kafka("/produce", { body: ["x", "y", "z"].map((value) => ({ topic: "orders", value })) }));
    expect(new Set(metas.map((m) => m.partition)).size).toBe(1);
    expect(metas.map((m) => m.offset - metas[0]!.offset)).toEqual([0, 1, 2]);
    const record = await fetchOne(metas[0]!.partition, metas[0]!.offset);
    // A record without a key comes back with key null, never "".
    expect(record).toMatchObject({ key: null, value: "x", timestamp: metas[0]!.timestamp });
    expect(record!.timestamp).toBeGreaterThanOrEqual(started - 1_000);
  });

  it("keeps non-string values as their JSON text", async () => {
    const [meta] = await ok<Meta[]>(kafka("/produce", { body: { topic: "orders", value: { amount: 3 }, partition: 0 } }));
    expect((await fetchOne(0, meta!.offset))!.value).toBe('{"amount":3}');
  });

  it("rejects bad input as a whole: nothing is appended", async () => {
    const before = await endOffsets("orders", ORDERS);
    const good = { topic: "orders", value: "fine", partition: 0 };
    await failure(kafka("/produce", { body: [good, { topic: "orders" }] }), 400);
    await failure(kafka("/produce", { body: [good, { topic: "orders", value: "v", partition: "1" }] }), 400);
    await failure(kafka("/produce", { body: [good, { topic: "orders", value: "v", headers: [{ key: "h" }] }] }), 400);
    // A queue message's id is the runtime's: a client may not send one.
    const reserved = await failure(
      kafka("/produce", { body: [good, { topic: "orders", value: "v", headers: [{ key: "edge-streams.source-id", value: "m1" }] }] }),
      400,
    );
    expect(reserved.error).toMatch(/edge-streams\.source-id is reserved/);
    await failure(kafka("/produce", { body: [] }), 400);
    await failure(kafka("/produce", { raw: "{not json" }), 400);
    const unknown = await failure(kafka("/produce", { body: [good, { topic: "no-such-topic", value: "v" }] }), 404);
    expect(unknown).toMatchObject({ code: "UNKNOWN_TOPIC_OR_PARTITION" });
    expect(unknown.error).toMatch(/^UNKNOWN_TOPIC_OR_PARTITION: /);
    await failure(kafka("/produce", { body: [good, { topic: "orders", value: "v", partition: 4 }] }), 404);
    expect(await endOffsets("orders", ORDERS)).toEqual(before);
  });
});

describe("POST /kafka/produce/:topic (and no GET form)", () => {
  it("takes a message or a list of messages as the body", async () => {
    const one = await ok<Meta>(kafka("/produce/orders", { body: { value: "one", key: "kk" } }));
    expect(one).toMatchObject({ topic: "orders", partition: partitionForKey("kk", ORDERS) });
    const many = await ok<Meta[]>(
      kafka("/produce/orders", {
        body: [
          { value: "m1", partition: 3 },
          { value: "m2", partition: 3 },
        ],
      }),
    );
    expect(many.map((m) => m.offset)).toEqual([many[0]!.offset, many[0]!.offset + 1]);
    expect((await fetchOne(3, many[1]!.offset))!.value).toBe("m2");
  });

  it("takes any other body as the value itself (sent as JSON, the only type a write takes)", async () => {
    const meta = await ok<Meta>(kafka("/produce/orders", { raw: "plain text value" }));
    expect((await fetchOne(meta.partition, meta.offset))!.value).toBe("plain text value");
    await failure(kafka("/produce/orders", { raw: "", method: "POST" }), 400);
    await failure(kafka("/produce/orders", { body: { value: "v", partition: -1 } }), 400);
  });

  it("never writes by GET: the dialect's GET /produce/:topic/:value is 404 and appends nothing", async () => {
    const before = await endOffsets("orders", ORDERS);
    expect((await failure(kafka("/produce/orders/hello%20kafka?key=city"), 404)).error).toMatch(/no route/);
    await failure(kafka("/produce/nope/hello"), 404);
    expect(await endOffsets("orders", ORDERS)).toEqual(before);
  });
});

describe("the edge-producer header: idempotence and fencing over the dialect (the runtime's credential, LOG_TOKEN)", () => {
  const produce = (producer: string, values: string[], partition = 1) =>
    kafka("/produce", {
      body: values.map((value) => ({ topic: "orders", value, partition, headers: [{ key: "edge-producer", value: producer }] })),
      auth: LOG_BASIC,
    });

  it("appends a request's records as one batch, strips the header, and answers a retry with the same offsets", async () => {
    const id = `p-${run}-retry`;
    const first = await ok<Meta[]>(produce(`${id};0;0`, ["a", "b"]));
    expect(first.map((m) => m.offset)).toEqual([first[0]!.offset, first[0]!.offset + 1]);
    expect(first.every((m) => !m.duplicate)).toBe(true);
    const before = await endOffsets("orders", ORDERS);
    const retry = await ok<Meta[]>(produce(`${id};0;0`, ["a", "b"]));
    expect(retry.map((m) => [m.offset, m.duplicate])).toEqual(first.map((m) => [m.offset, true]));
    expect(await endOffsets("orders", ORDERS)).toEqual(before);
    expect((await fetchOne(1, first[0]!.offset))!.headers).toEqual([]);
    const next = await ok<Meta[]>(produce(`${id};0;1`, ["c"]));
    expect(next[0]).toMatchObject({ offset: before[1], duplicate: false });
  });

  it("rejects a sequence gap and a reused sequence with other records, with the log's codes", async () => {
    const id = `p-${run}-seq`;
    await ok(produce(`${id};0;0`, ["a"]));
    const before = await endOffsets("orders", ORDERS);
    expect(await failure(produce(`${id};0;2`, ["b"]), 409)).toMatchObject({ code: "OUT_OF_ORDER_SEQUENCE" });
    expect(await failure(produce(`${id};0;0`, ["other"]), 409)).toMatchObject({ code: "DUPLICATE_SEQUENCE_MISMATCH" });
    expect(await endOffsets("orders", ORDERS)).toEqual(before);
  });

  it("fences an older epoch once a newer one appended", async () => {
    const id = `task-${run};with;semicolons`;
    await ok(produce(`${id};1;0`, ["old"]));
    await ok(produce(`${id};2;0`, ["new"]));
    const before = await endOffsets("orders", ORDERS);
    const fenced = await failure(produce(`${id};1;1`, ["zombie"]), 409);
    expect(fenced).toMatchObject({ code: "PRODUCER_FENCED" });
    expect(fenced.error).toMatch(/^PRODUCER_FENCED: /);
    expect(await endOffsets("orders", ORDERS)).toEqual(before);
  });

  it("keeps producers' and plain records in separate batches, in request order", async () => {
    const before = await endOffsets("orders", ORDERS);
    const header = [{ key: "edge-producer", value: `p-${run}-mixed;0;0` }];
    const metas = await ok<Meta[]>(
      kafka("/produce", {
        body: [
          { topic: "orders", value: "plain1", partition: 0 },
          { topic: "orders", value: "prod1", partition: 0, headers: header },
          { topic: "orders", value: "plain2", partition: 0 },
          { topic: "orders", value: "prod2", partition: 0, headers: header },
        ],
        auth: LOG_BASIC,
      }),
    );
    const base = before[0]!;
    expect(metas.map((m) => m.offset)).toEqual([base, base + 2, base + 1, base + 3]);
  });

  it("refuses a malformed or repeated header without appending anything", async () => {
    const before = await endOffsets("orders", ORDERS);
    for (const value of ["no-fields", "p;x;0", "p;0;-1", ";0;0"]) await failure(produce(value, ["v"]), 400);
    const twice = [
      { key: "edge-producer", value: "p;0;0" },
      { key: "edge-producer", value: "p;0;0" },
    ];
    await failure(kafka("/produce", { body: { topic: "orders", value: "v", headers: twice }, auth: LOG_BASIC }), 400);
    expect(await endOffsets("orders", ORDERS)).toEqual(before);
  });
});

describe("POST /kafka/fetch", () => {
  it("reads from an offset, and from several partitions at once", async () => {
    const metas = await ok<Meta[]>(kafka("/produce", { body: [0, 1, 0].map((partition, i) => ({ topic: "orders", value: `f${i}-${run}`, partition })) }));
    const page = await ok<Msg[]>(kafka("/fetch", { body: { topic: "orders", partition: 0, offset: metas[0]!.offset, timeout: 1000 } }));
    expect(page.map((m) => m.value)).toEqual([`f0-${run}`, `f2-${run}`]);
    const both = await ok<Msg[]>(
      kafka("/fetch", {
        body: {
          topicPartitionOffsets: [
            { topic: "orders", partition: 0, offset: metas[2]!.offset },
            { topic: "orders", partition: 1, offset: metas[1]!.offset },
          ],
        },
      }),
    );
    expect(both.map((m) => [m.partition, m.value])).toEqual([
      [0, `f2-${run}`],
      [1, `f1-${run}`],
    ]);
  });

  it("answers nothing at the end and OFFSET_OUT_OF_RANGE beyond it", async () => {
    const [end] = await endOffsets("orders", 1);
    expect(await ok(kafka("/fetch", { body: { topic: "orders", partition: 0, offset: end } }))).toEqual([]);
    const beyond = await failure(kafka("/fetch", { body: { topic: "orders", partition: 0, offset: end! + 1 } }), 416);
    expect(beyond.code).toBe("OFFSET_OUT_OF_RANGE");
  });

  it("bounds a call to 500 records", async () => {
    const [start] = await endOffsets("orders", 1);
    for (let i = 0; i < 3; i++) {
      await ok(kafka("/produce", { body: Array.from({ length: 200 }, (_, j) => ({ topic: "orders", value: `b${i}-${j}`, partition: 0 })) }));
    }
    const page = await ok<Msg[]>(kafka("/fetch", { body: { topic: "orders", partition: 0, offset: start } }));
    expect(page).toHaveLength(500);
    expect(page[499]!.offset).toBe(start! + 499);
  });

  it("validates the request", async () => {
    await failure(kafka("/fetch", { body: { topic: "orders", partition: 0 } }), 400);
    await failure(kafka("/fetch", { body: {} }), 400);
    await failure(kafka("/fetch", { body: { topic: "orders", partition: 0, offset: -1 } }), 400);
    await failure(kafka("/fetch", { body: { topic: "orders", partition: 9, offset: 0 } }), 404);
  });
});

describe("POST /kafka/offsets/:timestamp", () => {
  it("answers earliest, latest and the first offset at or after a timestamp", async () => {
    const metas = await ok<Meta[]>(
      kafka("/produce", { body: [1, 2].map((i) => ({ topic: "orders", value: `t${i}`, partition: 3, timestamp: 4_000_000_000_000 + i })) }),
    );
    const tp = [{ topic: "orders", partition: 3 }];
    expect(await ok(kafka("/offsets/earliest", { body: tp }))).toEqual([{ topic: "orders", partition: 3, offset: 0 }]);
    expect(await ok(kafka("/offsets/latest", { body: tp[0] }))).toEqual([{ topic: "orders", partition: 3, offset: metas[1]!.offset + 1 }]);
    expect(await ok(kafka("/offsets/4000000000002", { body: tp }))).toEqual([{ topic: "orders", partition: 3, offset: metas[1]!.offset }]);
    expect(await ok(kafka("/offsets/4000000000003", { body: tp }))).toEqual([{ topic: "orders", partition: 3, offset: metas[1]!.offset + 1 }]);
  });

  it("validates the timestamp and the partitions", async () => {
    await failure(kafka("/offsets/yesterday", { body: [{ topic: "orders", partition: 0 }] }), 400);
    await failure(kafka("/offsets/-5", { body: [{ topic: "orders", partition: 0 }] }), 400);
    await failure(kafka("/offsets/latest", { body: [{ topic: "orders" }] }), 400);
    expect(await failure(kafka("/offsets/latest", { body: [{ topic: "orders", partition: 4 }] }), 404)).toMatchObject({
      code: "UNKNOWN_TOPIC_OR_PARTITION",
    });
  });
});

describe("consumer groups", () => {
  const consume = (group: string, instance: string, headers: Record<string, string> = {}, body: unknown = { topic: "orders" }) =>
    kafka(`/consume/${group}/${instance}`, { body, headers: { "Kafka-Enable-Auto-Commit": "false", ...headers } });
  const committed = async (group: string) =>
    (
      await ok<{ partition: number; offset: number }[]>(
        kafka(`/committed/${group}/any`, { body: Array.from({ length: ORDERS }, (_, partition) => ({ topic: "orders", partition })) }),
      )
    ).map((o) => o.offset);
  /** Commits the current end offsets, so the group reads only what is produced afterwards. */
  const startAtEnd = async (group: string) => {
    const ends = await endOffsets("orders", ORDERS);
    await ok(kafka(`/commit/${group}/setup`, { body: ends.map((offset, partition) => ({ topic: "orders", partition, offset })) }));
    return ends;
  };
  const produceTo = (partitions: number[], tag: string) =>
    ok<Meta[]>(kafka("/produce", { body: partitions.map((partition, i) => ({ topic: "orders", value: `${tag}-${i}`, partition })) }));
  const mine = (messages: Msg[], tag: string) => messages.filter((m) => m.value.startsWith(`${tag}-`));

  it("splits partitions between two instances, deterministically, and lists them", async () => {
    const group = `two-${run}`;
    await startAtEnd(group);
    expect(await ok(consume(group, "a"))).toEqual([]);
    expect(await ok(consume(group, "b"))).toEqual([]);
    const groups = await ok<{ name: string; instances: { name: string; topics: { topic: string; partitions: number[] }[] }[] }[]>(kafka("/consumers"));
    expect(groups.find((g) => g.name === group)).toEqual({
      name: group,
      instances: [
        { name: "a", topics: [{ topic: "orders", partitions: [0, 2] }] },
        { name: "b", topics: [{ topic: "orders", partitions: [1, 3] }] },
      ],
    });
    const tag = `two-${run}`;
    await produceTo([0, 1, 2, 3, 0, 1, 2, 3], tag);
    const a = mine(await ok<Msg[]>(consume(group, "a")), tag);
    const b = mine(await ok<Msg[]>(consume(group, "b")), tag);
    expect(a.map((m) => m.partition).sort()).toEqual([0, 0, 2, 2]);
    expect(b.map((m) => m.partition).sort()).toEqual([1, 1, 3, 3]);
    // What was consumed is not read again by the same instance.
    expect(mine(await ok<Msg[]>(consume(group, "a")), tag)).toEqual([]);
  });

  it("auto-commits, at the next consume, what earlier consumes returned", async () => {
    const group = `auto-${run}`;
    const auto = { "Kafka-Enable-Auto-Commit": "true", "Kafka-Auto-Commit-Interval": "0" };
    expect(await ok(consume(group, "i", auto))).toEqual([]);
    const ends = await endOffsets("orders", ORDERS);
    const tag = `auto-${run}`;
    await produceTo([1, 1, 1], tag);
    expect(mine(await ok<Msg[]>(consume(group, "i", auto)), tag)).toHaveLength(3);
    // The records just returned are not committed yet (at least once): only the earlier position.
    expect((await committed(group))[1]).toBe(ends[1]);
    await ok(consume(group, "i", auto));
    expect((await committed(group))[1]).toBe(ends[1]! + 3);
  });

  it("auto-commits no more often than the interval", async () => {
    const group = `interval-${run}`;
    const slow = { "Kafka-Enable-Auto-Commit": "true", "Kafka-Auto-Commit-Interval": "3600000" };
    await ok(consume(group, "i", slow));
    await ok(consume(group, "i", slow));
    expect(await committed(group)).toEqual([-1, -1, -1, -1]);
  });

  it("commits manually what the instance consumed, or the offsets given", async () => {
    const group = `manual-${run}`;
    const ends = await startAtEnd(group);
    await ok(consume(group, "i"));
    const tag = `manual-${run}`;
    await produceTo([2, 2], tag);
    expect(mine(await ok<Msg[]>(consume(group, "i")), tag)).toHaveLength(2);
    expect((await committed(group))[2]).toBe(ends[2]);
    expect(await ok(kafka(`/commit/${group}/i`, { method: "POST" }))).toEqual({ result: "Success", status: 200 });
    expect((await committed(group))[2]).toBe(ends[2]! + 2);
    await ok(kafka(`/commit/${group}/i`, { body: { topic: "orders", partition: 2, offset: ends[2]! + 1 } }));
    expect((await committed(group))[2]).toBe(ends[2]! + 1);
  });

  it("refuses a commit beyond the end or for an unknown instance, committing nothing", async () => {
    const group = `badcommit-${run}`;
    const ends = await startAtEnd(group);
    await ok(kafka("/produce", { body: { topic: "orders", value: "one more", partition: 0 } }));
    const offsets = [
      { topic: "orders", partition: 0, offset: ends[0]! + 1 },
      { topic: "orders", partition: 1, offset: ends[1]! + 100 },
    ];
    expect(await failure(kafka(`/commit/${group}/x`, { body: offsets }), 416)).toMatchObject({ code: "OFFSET_OUT_OF_RANGE" });
    expect((await committed(group))[0]).toBe(ends[0]);
    await failure(kafka(`/commit/${group}/never-joined`, { method: "POST" }), 404);
    await failure(kafka(`/commit/${group}/x`, { body: { topic: "orders", partition: 0 } }), 400);
  });

  it("resets to the earliest offset when the group has none", async () => {
    const group = `earliest-${run}`;
    await ok(kafka("/produce", { body: { topic: "orders", value: "seed", partition: 0 } }));
    const messages = await ok<Msg[]>(consume(group, "i", { "Kafka-Auto-Offset-Reset": "earliest" }));
    expect(messages.length).toBeGreaterThan(0);
    for (const partition of new Set(messages.map((m) => m.partition))) {
      expect(Math.min(...messages.filter((m) => m.partition === partition).map((m) => m.offset))).toBe(0);
    }
  });

  it("resets to the latest offset by default, reading only what comes after", async () => {
    const group = `latest-${run}`;
    expect(await ok(kafka(`/consume/${group}/i`, { body: { topics: ["orders"] } }))).toEqual([]);
    const tag = `latest-${run}`;
    await produceTo([0, 3], tag);
    const messages = await ok<Msg[]>(kafka(`/consume/${group}/i`, { body: { topics: ["orders"] } }));
    expect(messages.map((m) => m.value).sort()).toEqual([`${tag}-0`, `${tag}-1`]);
  });

  it("with reset none, refuses until the group has committed offsets", async () => {
    const group = `none-${run}`;
    const none = { "Kafka-Auto-Offset-Reset": "none" };
    expect((await failure(consume(group, "i", none), 409)).error).toMatch(/no valid committed offset/);
    await startAtEnd(group);
    const tag = `none-${run}`;
    await produceTo([3], tag);
    expect(mine(await ok<Msg[]>(consume(group, "i", none)), tag)).toHaveLength(1);
  });

  it("also consumes with the short form /consume/:group/:instance/:topic", async () => {
    const group = `short-${run}`;
    await startAtEnd(group);
    await ok(kafka(`/consume/${group}/i/orders`, { headers: { "Kafka-Enable-Auto-Commit": "false" } }));
    await produceTo([1], `short-${run}`);
    expect(mine(await ok<Msg[]>(kafka(`/consume/${group}/i/orders`)), `short-${run}`)).toHaveLength(1);
  });

  it("validates consume requests and changes no membership on bad input", async () => {
    const group = `invalid-${run}`;
    await failure(consume(group, "i", {}, {}), 400);
    await failure(consume(group, "i", {}, { topic: "orders", topics: ["orders"] }), 400);
    await failure(consume(group, "i", { "Kafka-Auto-Offset-Reset": "sometimes" }), 400);
    await failure(consume(group, "i", { "Kafka-Enable-Auto-Commit": "yes" }), 400);
    await failure(consume(group, "i", { "Kafka-Auto-Commit-Interval": "soon" }), 400);
    expect(await failure(consume(group, "i", {}, { topic: "no-such-topic" }), 404)).toMatchObject({ code: "UNKNOWN_TOPIC_OR_PARTITION" });
    const groups = await ok<{ name: string }[]>(kafka("/consumers"));
    expect(groups.map((g) => g.name)).not.toContain(group);
  });

  it("answers -1 for partitions the group never committed", async () => {
    expect(await ok(kafka(`/committed/never-${run}/i`, { body: [{ topic: "orders", partition: 0 }] }))).toEqual([
      { topic: "orders", partition: 0, offset: -1 },
    ]);
    await failure(kafka(`/committed/never-${run}/i`, { body: [{ topic: "orders", partition: 7 }] }), 404);
  });

  it("deletes an instance, committing what it consumed when auto-commit is on, and hands its partitions over", async () => {
    const group = `delete-${run}`;
    const ends = await startAtEnd(group);
    const auto = { "Kafka-Enable-Auto-Commit": "true", "Kafka-Auto-Commit-Interval": "3600000" };
    await ok(consume(group, "a", auto));
    await ok(consume(group, "b", auto));
    const tag = `delete-${run}`;
    await produceTo([0, 2], tag);
    expect(mine(await ok<Msg[]>(consume(group, "a", auto)), tag)).toHaveLength(2);
    expect(await ok(kafka(`/delete-consumer/${group}/a`, { method: "POST" }))).toEqual({ result: "Success", status: 200 });
    const after = await committed(group);
    expect([after[0], after[2]]).toEqual([ends[0]! + 1, ends[2]! + 1]);
    const groups = await ok<{ name: string; instances: { name: string; topics: { partitions: number[] }[] }[] }[]>(kafka("/consumers"));
    expect(groups.find((g) => g.name === group)?.instances).toEqual([{ name: "b", topics: [{ topic: "orders", partitions: [0, 1, 2, 3] }] }]);
    await failure(kafka(`/delete-consumer/${group}/a`, { method: "POST" }), 404);
    await ok(kafka(`/delete-consumer/${group}/b`, { method: "POST" }));
    expect((await ok<{ name: string }[]>(kafka("/consumers"))).map((g) => g.name)).not.toContain(group);
  });
});

describe("consumer group sessions", () => {
  it("expires an instance not heard from for the session timeout and reassigns its partitions", async () => {
    const catalog = new TopicCatalog({ orders: 4 });
    const log = new DurableLog(env.LOG_PARTITION, catalog);
    const stub = env.CONSUMER_GROUP.getByName(groupObjectName(`expiry-${run}`));
    await runInDurableObject(stub, async (_instance, state) => {
      let now = 1_000_000;
      const group = new ConsumerGroupCoordinator(state.storage, log, { clock: () => now, sessionTimeoutMs: 10_000 });
      const request = (instance: string) => ({ instance, topics: ["orders"], autoCommit: false, autoCommitInterval: 0, offsetReset: "latest" as const });
      await group.consume("g", request("a"));
      await group.consume("g", request("b"));
      expect((await group.describe("g")).instances.map((i) => i.name)).toEqual(["a", "b"]);
      now += 9_000;
      await group.consume("g", request("b"));
      now += 2_000; // a: 11 s silent, b: 2 s
      expect(await group.describe("g")).toEqual({ name: "g", instances: [{ name: "b", topics: [{ topic: "orders", partitions: [0, 1, 2, 3] }] }] });
      await expect(group.commit("g", "a")).rejects.toThrow(/not in group/);
    });
  });
});

describe("fetch bounds in bytes", () => {
  it("stops at about 1 MiB per call, but always returns at least one record", async () => {
    // Appended as another producer would: the application's own appends would start its tasks,
    // still working (and loading modules) when this file's environment is torn down.
    const log = new DurableLog(env.LOG_PARTITION, new TopicCatalog({ orders: 4 })).forExternalProducers();
    const big = "x".repeat(400 * 1024);
    const { baseOffset } = await log.append(
      { topic: "orders", partition: 3 },
      [1, 2, 3].map((i) => ({ key: null, value: `${i}${big}` })),
    );
    const page = await ok<Msg[]>(kafka("/fetch", { body: { topic: "orders", partition: 3, offset: baseOffset } }));
    expect(page.map((m) => m.offset)).toEqual([baseOffset, baseOffset + 1]);
    const huge = await log.append({ topic: "orders", partition: 3 }, [{ key: null, value: "y".repeat(MAX_RECORD_BYTES - 10) }]);
    const alone = await ok<Msg[]>(kafka("/fetch", { body: { topic: "orders", partition: 3, offset: huge.baseOffset } }));
    expect(alone.map((m) => m.offset)).toEqual([huge.baseOffset]);
  });
});
