/**
 * What each backend says it can do, as the runtime relies on it (never on a backend's name or
 * class): a log that wakes readers is not polled (task-object.ts, restore-worker.ts), one that
 * starts tasks is appended to at once (routes/ingest.ts), and `/kafka` appends through
 * `forExternalProducers`, which must never start this deployment's tasks (routes/kafka-rest.ts).
 * Each backend is opened as the platform opens it (platform/open-log.ts). Pure: no call leaves.
 */
import { describe, expect, it } from "vitest";
import { openLog } from "../../platform/open-log";
import { readConfig } from "../../src/config";
import type { AppendOrigin } from "../../src/log/durable-log";
import { InvalidRecord } from "../../src/log/errors";
import { TopicCatalog } from "../../src/log/topics";
import type { AppendResult } from "../../src/log/types";

const catalog = new TopicCatalog({ clicks: 2 });
const tp = { topic: "clicks", partition: 1 };

/** Partitions that answer every append, noting whose it was (`AppendOrigin`). */
function partitions() {
  const origins: (AppendOrigin | undefined)[] = [];
  const answer = (origin?: AppendOrigin) => {
    origins.push(origin);
    return Promise.resolve({ ok: true as const, value: { baseOffset: 0, count: 1, duplicate: false } satisfies AppendResult });
  };
  const stub = {
    append: (_tp: unknown, _records: unknown, _producer: unknown, _config: unknown, origin?: AppendOrigin) => answer(origin),
    appendEncoded: (_tp: unknown, _records: unknown, _producer: unknown, _config: unknown, origin?: AppendOrigin) => answer(origin),
  };
  return { origins, getByName: () => stub };
}

describe("the embedded log (LOG_BACKEND=durable)", () => {
  it("wakes readers, starts tasks and deletes records", () => {
    const log = openLog(partitions(), readConfig({}), catalog);
    expect(log.capabilities).toEqual({ wakesReaders: true, startsTasks: true, deletesRecords: true });
  });

  it("appends for external producers as theirs: still waking readers, starting no task", async () => {
    const namespace = partitions();
    const log = openLog(namespace, readConfig({}), catalog);
    const external = log.forExternalProducers();
    expect(external.capabilities).toEqual({ wakesReaders: true, startsTasks: false, deletesRecords: true });
    expect(log.forExternalProducers()).toBe(external);
    expect(external.forExternalProducers()).toBe(external);
    await log.append(tp, [{ key: "k", value: "mine" }]);
    await external.append(tp, [{ key: "k", value: "theirs" }]);
    expect(namespace.origins).toEqual(["application", "external"]);
  });
});

describe("the @upstash/kafka log (LOG_BACKEND=upstash)", () => {
  const config = readConfig({
    LOG_BACKEND: "upstash",
    UPSTASH_KAFKA_REST_URL: "http://127.0.0.1:1/kafka",
    UPSTASH_KAFKA_REST_USERNAME: "edge",
    UPSTASH_KAFKA_REST_PASSWORD: "secret",
  });

  it("wakes no reader and starts no task, so readers poll and ingest gets the assignment first; it cannot delete records", async () => {
    const log = openLog(partitions(), config, catalog);
    expect(log.capabilities).toEqual({ wakesReaders: false, startsTasks: false, deletesRecords: false });
    await expect(log.deleteRecordsBefore(tp, 0)).rejects.toBeInstanceOf(InvalidRecord);
  });

  it("is its own view for external producers: its appends never start this deployment's tasks", () => {
    const log = openLog(partitions(), config, catalog);
    expect(log.forExternalProducers()).toBe(log);
  });
});
