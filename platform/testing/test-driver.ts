/**
 * A test driver for Edge Streams applications, in the spirit of Kafka Streams'
 * TopologyTestDriver, for use in `@cloudflare/vitest-pool-workers` tests. It drives the real
 * components — log partitions, coordinator, task objects — deterministically: pipe input, run
 * processing to quiescence, read stores (key-value, window and session stores, by typed keys as
 * TopologyTestDriver reads them) and output topics. No timers, no sleeps.
 */
import { Application } from "../../src/application";
import type { InstanceAssignment } from "../../src/coordinator/coordinator-store";
import { DurableLog } from "../../src/log/durable-log";
import { partitionForKey } from "../../src/log/partitioner";
import type { LogRecord, ProducerRecord } from "../../src/log/types";
import { encodeInput, inputSerdes, RefusedRecord, toProducerRecord } from "../../src/streams/topology/input-encoding";
import type { EdgeStreamsEnv } from "../bindings";
import { Host } from "../host";
import type { Serde } from "../../src/streams/serdes";
import { MAX_TIME } from "../../src/streams/state/key-codec";
import type { StoreKind } from "../../src/streams/topology/topology";
import type { WindowedValue } from "../../src/streams/windowed";

/** A record to pipe: typed key and value (a null value is a tombstone). */
export interface TestInput<V = unknown, K = string> {
  readonly key: K | null;
  readonly value: V;
  readonly partition?: number;
  readonly timestamp?: number;
}

export interface TestOutput extends LogRecord {
  readonly partition: number;
}

/** Which read serves each kind of store. */
const READ_BY_KIND: Record<StoreKind, string> = {
  "key-value": "get()",
  window: "windows()",
  session: "sessions()",
  buffer: "nothing: a suppression buffer holds results that are not final",
};

export class TestDriver {
  readonly log: DurableLog<ReturnType<Host["partition"]>>;
  private readonly app: Application;
  private readonly host: Host;

  /**
   * `env` is the test's `env` from "cloudflare:workers"; `application` the one the Worker runs: what
   * `defineEdgeStreams` returned (its application for `env`), or an `Application`.
   */
  constructor(env: EdgeStreamsEnv, application: Application | { applicationFor(env: EdgeStreamsEnv): Application }) {
    this.app = application instanceof Application ? application : application.applicationFor(env);
    this.host = Host.of(this.app, env);
    // The application's own topics only (not those of the `TOPICS` var), as the tasks see them.
    this.log = new DurableLog(env.LOG_PARTITION, this.app.catalog);
  }

  private get coordinator() {
    return this.host.coordinator();
  }

  /** Makes the assignment (if not made yet) and returns it. */
  async instances(): Promise<InstanceAssignment[]> {
    return this.coordinator.ensureAssigned();
  }

  /**
   * Appends records to a topic, encoded as HTTP ingest encodes them (the same bytes): with the
   * serdes of the source reading the topic, checked by reading them back, a null value as a
   * tombstone; a topic no source reads takes string keys and JSON values. Throws, appending
   * nothing, for a record HTTP ingest would refuse (to test what a bad record does, append its
   * bytes with `driver.log.append`).
   */
  async pipe<V, K = string>(topic: string, inputs: readonly TestInput<V, K>[]): Promise<void> {
    await this.instances();
    const partitions = this.app.catalog.partitions(topic);
    const serdes = inputSerdes(this.app.topology, topic);
    const byPartition = new Map<number, ProducerRecord[]>();
    inputs.forEach((input, index) => {
      let encoded: ReturnType<typeof encodeInput>;
      try {
        encoded = encodeInput(serdes, input.key, input.value);
      } catch (error) {
        if (!(error instanceof RefusedRecord)) throw error;
        throw new Error(`record ${index} of ${topic}${error.field ? `, its ${error.field}` : ""}: ${error.message}`, { cause: error });
      }
      const partition = input.partition ?? (encoded.key === null ? 0 : partitionForKey(encoded.key, partitions));
      byPartition.set(partition, [...(byPartition.get(partition) ?? []), toProducerRecord(encoded, input.timestamp)]);
    });
    for (const [partition, records] of byPartition) await this.log.append({ topic, partition }, records);
  }

  /**
   * Runs restoration and processing until nothing has work left: rounds of restore batches on
   * every placement's restore worker and draining every active task, until two rounds in a row
   * find no work, every running active task consumed all its input and sent all its output, and
   * no task processed anything in between. (The tasks' own alarms run meanwhile: one may produce
   * input for a task that was looked at a moment before, so one quiet look alone proves nothing.)
   * Stopped tasks do not count. Throws if that takes more than `maxRounds` rounds.
   */
  async runUntilQuiet(maxRounds = 1_000): Promise<void> {
    let previous: string | undefined;
    for (let round = 0; round < maxRounds; round++) {
      const restored = await this.restoreRound();
      const assigned = (await this.instances()).filter((i) => i.role === "active");
      // An active the coordinator has not been able to tell yet has nothing to drain: not quiet.
      const actives = assigned.filter((i) => i.acknowledged);
      const results = await Promise.all(actives.map((i) => this.task(i).drain()));
      if (restored > 0 || results.some((r) => r.worked > 0) || actives.length < assigned.length) {
        previous = undefined;
        continue;
      }
      const seen = await Promise.all(actives.map((i) => this.task(i).metrics()));
      const settled = seen.every((d) => d.state !== "RUNNING" || d.failure !== null || (d.lag === 0 && d.pendingBatches === 0));
      const fingerprint = JSON.stringify(seen.map((d) => [d.id, d.placement, d.incarnation, d.state, d.counters.processed.total, d.lag, d.pendingBatches]));
      if (settled && fingerprint === previous) return;
      previous = settled ? fingerprint : undefined;
    }
    throw new Error(`processing did not quiesce within ${maxRounds} rounds`);
  }

  /** One round of every restore worker (every shard of every placement); returns the batches applied. */
  async restoreRound(): Promise<number> {
    const workers = this.host.config.PLACEMENTS.flatMap((p) => this.host.restoreWorkers(p));
    const rounds = await Promise.all(workers.map((worker) => worker.runRound()));
    return rounds.reduce((n, r) => n + r.applied, 0);
  }

  /** A placement's restore worker (shard 0: the only one while `RESTORE_SHARDS` is 1). */
  restoreWorker(placement: string, shard = 0) {
    return this.host.restoreWorker(placement, shard);
  }

  /** The restore worker serving an instance (its placement's shard for its task). */
  restoreWorkerOf(instance: { taskId: string; placement: string }) {
    return this.host.restoreWorkerNamed(this.host.restoreWorkerNameOf(instance));
  }

  /** The task object of an instance. */
  task(instance: { taskId: string; placement: string }) {
    return this.host.taskObject(instance);
  }

  /**
   * A key's value in a key-value store, deserialized with the store's value serde; undefined when
   * absent. The key is typed, as `TopologyTestDriver.get` takes it: serialized with the store's key
   * serde, it finds the task that owns it. Read from the RUNNING active instance, through its cache.
   */
  async get<K, V>(store: string, key: K): Promise<V | undefined> {
    const { definition, serializedKey, taskId, task } = await this.owner(store, key, ["key-value"]);
    const answer = await task.query(store, serializedKey);
    if (answer.status !== "ok") throw new Error(`task ${taskId} cannot answer: ${answer.status}`);
    return answer.value === undefined ? undefined : (definition.valueSerde.deserialize(answer.value) as V);
  }

  /**
   * A key's windows with a start in `[from, to]`, oldest first, from a window store (what
   * `TopologyTestDriver.windows` returns, with the same typed key).
   */
  async windows<K, V>(store: string, key: K, from = 0, to = MAX_TIME): Promise<WindowedValue<V>[]> {
    return this.windowed<K, V>(store, key, "window", from, to);
  }

  /** A key's sessions, oldest first, from a session store (what `TopologyTestDriver.sessions` returns, with the same typed key). */
  async sessions<K, V>(store: string, key: K): Promise<WindowedValue<V>[]> {
    return this.windowed<K, V>(store, key, "session", 0, MAX_TIME);
  }

  private async windowed<K, V>(store: string, key: K, kind: "window" | "session", from: number, to: number): Promise<WindowedValue<V>[]> {
    const { definition, serializedKey, taskId, task } = await this.owner(store, key, [kind]);
    const answer = await task.windows(store, serializedKey, from, to, kind);
    if (answer.status !== "ok") throw new Error(`task ${taskId} cannot answer: ${answer.status}`);
    return answer.windows.map((w) => ({ window: w.window, value: definition.valueSerde.deserialize(w.value) as V }));
  }

  /** The store (one of `kinds`), the key serialized with its key serde, and the active instance of the task that owns that key. */
  private async owner<K>(store: string, key: K, kinds: readonly StoreKind[]) {
    const found = this.app.store(store);
    if (!found) throw new Error(`unknown store ${store}`);
    const definition = found.store;
    if (!kinds.includes(definition.kind)) throw new Error(`store ${store} is a ${definition.kind} store: read it with ${READ_BY_KIND[definition.kind]}`);
    const serializedKey = (definition.keySerde as Serde<K>).serialize(key);
    const taskId = this.app.taskForStorePartition(found.subtopology, partitionForKey(serializedKey, found.subtopology.partitions));
    const active = (await this.instances()).find((i) => i.taskId === taskId && i.role === "active");
    if (!active) throw new Error(`task ${taskId} has no active instance`);
    return { definition, serializedKey, taskId, task: this.task(active) };
  }

  /** Every record of a topic, partition by partition, in offset order. */
  async read(topic: string): Promise<TestOutput[]> {
    const out: TestOutput[] = [];
    for (let partition = 0; partition < this.app.catalog.partitions(topic); partition++) {
      let offset = (await this.log.offsets({ topic, partition })).earliest;
      for (;;) {
        const page = await this.log.fetch({ topic, partition }, offset, { maxRecords: 1_000, maxBytes: 4 << 20 });
        out.push(...page.records.map((r) => ({ ...r, partition })));
        if (page.records.length === 0) break;
        offset = page.nextOffset;
      }
    }
    return out;
  }
}
