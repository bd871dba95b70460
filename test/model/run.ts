/**
 * The model-based randomized test's machinery (test/model.test.ts and test/model-more-seeds.test.ts
 * run it): one schedule run against the real objects and checked.
 *
 * Model-based randomized test: a seeded schedule of produces, corruptions, crashes (at once and at
 * a commit step), migrations and moves back, log failures, restore pauses, resumes and rounds,
 * restore-worker and coordinator crashes, cluster restarts and partial progress runs against the
 * real Durable Objects. The model is the fold of every order produced.
 *
 * After every operation each task instance is observed in one atomic snapshot of its storage (the
 * state `describe()` reports, and the store itself), without calling the log through the fault
 * injection, so observing never changes the run:
 * - I1: checkpoint ≤ changelog end; the store is exactly the changelog below the checkpoint plus
 *   the changelog records still in its outbox; checkpoints never go back within an incarnation,
 *   incarnations never go back, and the restore worker never believes an instance further than it is.
 * - I5 at every moment: the store is the fold of its input below the input position it holds.
 * At the end of a seed (restoration resumed, run until quiet) every key's total is the model's,
 * every active is RUNNING with lag 0, and per key the changelog (and the output topic) is exactly
 * the running fold: count 1, 2, 3… with no repeat and no gap.
 *
 * Each schedule starts from empty storage. CI runs CI_SEEDS seeds of CI_OPS operations; `npm run
 * soak` runs many more (test/model/soak.mjs; one seed alone: SOAK_FIRST_SEED=<seed> SOAK_SEEDS=1
 * SOAK_OPS=<ops> npx vitest run -c test/model/soak.config.ts). A failure names its seed and
 * prints the schedule and what each operation did, with the instances' states after it. The
 * schedule is a function of the seed; the objects' own alarms still run in the background, so a
 * rerun takes the same steps but not always the same interleaving.
 */
import { abortAllDurableObjects, reset, runInDurableObject } from "cloudflare:test";
import { COORDINATOR_NAME, GROUP_DIRECTORY_NAME, groupObjectName, instanceName, topicPartition, restoreWorkerName } from "../../src/names";
import { env } from "cloudflare:workers";
import { expect, inject } from "vitest";
import type { PartitionStore } from "../../src/log/partition-store";
import { partitionForKey } from "../../src/log/partitioner";
import { decodeRecords } from "../../src/log/record-batch";
import type { LogRecord, ProducerRecord } from "../../src/log/types";
import { positionFromHeaders } from "../../src/streams/runtime/position-header";
import type { TaskDescription } from "../../src/task/describe";
import { TOMBSTONE_HEADER } from "../../src/task/record-collector";
import { readBook, readSpilled } from "../../src/task/task-book-row";
import { Sql } from "../../src/storage/sql";
import type { TaskRole, TaskState } from "../../src/task/state";
import { TestDriver } from "../../platform/testing/test-driver";
import { application } from "../support/orders-app";
import { call } from "../support/api";
import { kafka } from "../kafka-rest/support";
import { formatOp, keysFor, lastValues, PARTITIONS, runningTotals, type Op, type PlannedOrder, type Totals } from "./schedule";
import { activeInstance } from "../support/active";
import { storedEntries } from "../support/store-rows";

declare module "vitest" {
  interface ProvidedContext {
    soak?: { seeds: number; ops: number; firstSeed: number };
  }
}

/** Seeds in CI: the first half in test/model.test.ts, the second in test/model-more-seeds.test.ts (two files run at once). */
export const CI_SEEDS = 20;
const CI_OPS = 30;
export const soak = inject("soak");
export const SEEDS = soak?.seeds ?? CI_SEEDS;
export const OPS = soak?.ops ?? CI_OPS;
export const FIRST_SEED = soak?.firstSeed ?? 1;

const driver = new TestDriver(env, application);
const PLACEMENTS = ["a", "b"] as const;
const TASKS = Array.from({ length: PARTITIONS }, (_, p) => `0_${p}`);
const CHANGELOG = "edge-streams-totals-changelog";
const STORE = "totals";

/** Errors an operation may end with by design: injected faults, and a call to an object that died. */
const EXPECTED_FAILURE = /injected (failure|crash)|did not answer|under way|no assignment yet/;

// ---- the model: every order appended, per partition, in offset order (reset for each schedule) ----

let produced: { key: string; amount: number }[][] = [];

// ---- reading the log and the task instances without going through fault injection ----

/** A copy of one partition, kept up to date incrementally (partitions only grow here). */
class Mirror {
  readonly records: LogRecord[] = [];
  constructor(
    readonly topic: string,
    readonly partition: number,
  ) {}

  /** Reads what is new, straight from the partition's store (no fault injection on the way). */
  async sync(): Promise<void> {
    const tp = { topic: this.topic, partition: this.partition };
    const from = this.records.length;
    const records = await runInDurableObject(env.LOG_PARTITION.getByName(`${this.topic}/${this.partition}`), (object) => {
      const store = (object as unknown as { store: PartitionStore }).store;
      const out: LogRecord[] = [];
      for (let offset = from; ; ) {
        const page = store.fetch(tp, offset, { maxRecords: 10_000, maxBytes: 64 << 20 });
        out.push(...page.records);
        if (page.records.length === 0) return out;
        offset = page.nextOffset;
      }
    });
    const gap = records.findIndex((r, i) => r.offset !== from + i);
    if (gap >= 0) expect(records[gap]!.offset, `${this.topic}/${this.partition} has no gaps`).toBe(from + gap);
    this.records.push(...records);
  }
}

let changelogs: Mirror[] = [];
let outputs: Mirror[] = [];
let inputs: Mirror[] = [];

/** One task instance's storage, read in one synchronous step: a consistent snapshot. */
interface Snapshot {
  readonly name: string;
  readonly role: TaskRole;
  readonly state: TaskState;
  readonly epoch: number;
  readonly incarnation: number;
  readonly failure: string | null;
  readonly checkpoint: number | null;
  /** The next input offset to process. */
  readonly position: number;
  readonly store: Map<string, string>;
  /** Changelog records committed locally and not yet acknowledged, oldest first. */
  readonly outboxChangelog: ProducerRecord[];
  readonly outboxBatches: number;
}

/**
 * A read of the state, made again (a few times at most) when it meets a crash an earlier
 * operation planned: such a crash may fire from the object's own alarm while the read is under
 * way, and the restarted object answers the next one.
 */
async function acrossPlannedCrashes<T>(read: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await read();
    } catch (error) {
      if (attempt >= 3 || !/injected crash/.test(String(error))) throw error;
    }
  }
}

/** What one instance holds, read inside it. */
const snapshot = (taskId: string, placement: string) => acrossPlannedCrashes(() => readSnapshot(taskId, placement));

function readSnapshot(taskId: string, placement: string): Promise<Snapshot | undefined> {
  const partition = partitionOf(taskId);
  return runInDurableObject(driver.task({ taskId, placement }), (_object, state) => {
    const sql = state.storage.sql;
    const db = new Sql(sql);
    const book = readBook(db);
    if (!book.meta) return undefined;
    const { role, state: taskState, epoch, incarnation, failure } = book.meta;
    const meta = { role, state: taskState, epoch, incarnation, failure };
    const checkpoint = book.checkpoints.get(`${CHANGELOG}/${partition}`);
    const position = book.inputs.get(`orders/${partition}`);
    const store = new Map(storedEntries(sql, STORE).map((r) => [r.key, r.value]));
    const outbox = [...book.batches]
      .sort((a, b) => a.commitId - b.commitId || a.phase - b.phase || a.id - b.id)
      .map((b) => ({ topic: b.topic, records: b.text ?? readSpilled(db, b.id) }));
    return {
      name: `${taskId}@${placement}`,
      ...meta,
      checkpoint: checkpoint?.offset ?? null,
      position: position?.offset ?? 0,
      store,
      outboxChangelog: outbox.filter((b) => b.topic === CHANGELOG).flatMap((b) => decodeRecords(b.records)),
      outboxBatches: outbox.length,
    };
  });
}

/** The partition of a task (`0_2`) or of one of its instances (`0_2@a`). */
function partitionOf(name: string): number {
  return Number.parseInt(name.slice(name.indexOf("_") + 1), 10);
}

/** Applies changelog records to a store image, as restoration does. */
function replay(image: Map<string, string>, records: readonly { key: string | null; value: string; headers?: readonly { key: string }[] }[]) {
  for (const r of records) {
    if (r.headers?.some((h) => h.key === TOMBSTONE_HEADER)) image.delete(r.key ?? "");
    else image.set(r.key ?? "", r.value);
  }
  return image;
}

const sorted = <V>(map: ReadonlyMap<string, V>) => Object.fromEntries([...map].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));

/** Two maps hold the same entries: compared cheaply, with vitest's diff only when they differ. */
function expectSame<V>(actual: ReadonlyMap<string, V>, expected: ReadonlyMap<string, V>, message: string): void {
  const same = actual.size === expected.size && [...actual].every(([k, v]) => expected.has(k) && JSON.stringify(v) === JSON.stringify(expected.get(k)));
  if (!same) expect(sorted(actual), message).toEqual(sorted(expected));
}
const parsed = (map: ReadonlyMap<string, string>) => new Map([...map].map(([k, v]) => [k, JSON.parse(v) as Totals]));

// ---- invariant checks ----

/** Per instance: the last incarnation and, within it, the highest checkpoint observed (-1: none). */
let observed = new Map<string, { incarnation: number; checkpoint: number }>();

/** Every object a schedule can touch: the application's log partitions, its task instances at every placement, the restore workers, the coordinator, and the Kafka REST endpoint's group objects. */
function scheduleObjects(): DurableObjectStub<undefined>[] {
  const partitions = [...application.catalog.all].flatMap(([topic, count]) =>
    Array.from({ length: count }, (_, partition) => env.LOG_PARTITION.getByName(topicPartition({ topic, partition }))),
  );
  const instances = TASKS.flatMap((taskId) => PLACEMENTS.map((placement) => env.TASK_OBJECT.getByName(instanceName({ taskId, placement }))));
  const workers = PLACEMENTS.map((placement) => env.RESTORE_WORKER.getByName(restoreWorkerName(placement)));
  const groups = [GROUP_DIRECTORY_NAME, groupObjectName(application.groupId)].map((name) => env.CONSUMER_GROUP.getByName(name));
  return [...partitions, ...instances, ...workers, env.COORDINATOR.getByName(COORDINATOR_NAME), ...groups] as unknown as DurableObjectStub<undefined>[];
}

/** Every schedule starts from empty storage and an empty model, so it reproduces on its own. */
async function fresh(): Promise<void> {
  // reset() deletes the objects that are running: every object a schedule can touch is woken
  // first, so none left from the last schedule (one that crashed, say) keeps its storage or a
  // planned fault. (Named here rather than listed: listing objects needs a newer miniflare than
  // Node 20's.)
  await Promise.all(scheduleObjects().map((stub) => runInDurableObject(stub, () => undefined)));
  await reset();
  produced = TASKS.map(() => []);
  changelogs = TASKS.map((_, p) => new Mirror(CHANGELOG, p));
  outputs = TASKS.map((_, p) => new Mirror("totals", p));
  inputs = TASKS.map((_, p) => new Mirror("orders", p));
  observed = new Map();
}

type Assignments = readonly { taskId: string; placement: string; role: string; acknowledged: boolean }[];

/**
 * Observes every task instance the coordinator ever assigned (no other has state) and checks I1
 * and I5 on each. Returns the snapshots and the coordinator's assignment.
 */
async function observe(): Promise<{ snapshots: Snapshot[]; assignments: Assignments }> {
  // The restore workers' beliefs first: an instance's checkpoint only grows, so it must be at
  // least the position the worker last heard from it, if it is still the same incarnation.
  const beliefs = (await Promise.all(PLACEMENTS.map((p) => acrossPlannedCrashes(() => driver.restoreWorker(p).status())))).flatMap((s) => s.changelogs);
  const assignments = (await acrossPlannedCrashes(() => env.COORDINATOR.getByName("coordinator").assignments())) as Assignments;
  const snapshots = (await Promise.all(assignments.map((a) => snapshot(a.taskId, a.placement)))).filter((s): s is Snapshot => s !== undefined);
  // A changelog is read again only when a checkpoint is beyond what was read of it: ends only grow.
  await Promise.all(
    changelogs.filter((m) => snapshots.some((s) => partitionOf(s.name) === m.partition && (s.checkpoint ?? 0) > m.records.length)).map((m) => m.sync()),
  );
  for (const snap of snapshots) {
    const p = partitionOf(snap.name);
    const at = `${snap.name} (${snap.role} ${snap.state} incarnation ${snap.incarnation})`;

    // I1: the checkpoint is never beyond the changelog, and the store is exactly the changelog
    // below the checkpoint plus what its outbox has yet to send (nothing else, nothing less).
    expect(snap.checkpoint ?? 0, `${at}: checkpoint ≤ changelog end`).toBeLessThanOrEqual(changelogs[p]!.records.length);
    const image = replay(replay(new Map(), changelogs[p]!.records.slice(0, snap.checkpoint ?? 0)), snap.outboxChangelog);
    expectSame(snap.store, image, `${at}: store = changelog below checkpoint ${snap.checkpoint} + outbox`);

    // I5, at every moment: the store is the fold of the input below the instance's position.
    expect(snap.position, `${at}: input position within the input`).toBeLessThanOrEqual(produced[p]!.length);
    const folded = lastValues(runningTotals(produced[p]!.slice(0, snap.position)));
    expectSame(parsed(snap.store), folded, `${at}: store = fold of input below position ${snap.position}`);

    // Checkpoints never go back within an incarnation; incarnations never go back.
    const before = observed.get(snap.name);
    const checkpoint = snap.checkpoint ?? -1;
    if (before) {
      expect(snap.incarnation, `${at}: incarnation never decreases`).toBeGreaterThanOrEqual(before.incarnation);
      if (snap.incarnation === before.incarnation) expect(checkpoint, `${at}: checkpoint never decreases`).toBeGreaterThanOrEqual(before.checkpoint);
    }
    observed.set(snap.name, {
      incarnation: snap.incarnation,
      checkpoint: Math.max(checkpoint, before?.incarnation === snap.incarnation ? before.checkpoint : -1),
    });

    for (const belief of beliefs.filter((b) => b.instance === snap.name && b.incarnation === snap.incarnation && b.position !== null)) {
      expect(checkpoint, `${at}: restore worker's position ${belief.position} ≤ checkpoint`).toBeGreaterThanOrEqual(belief.position!);
    }
  }
  return { snapshots, assignments };
}

/** After settling: everything caught up, and every history exactly the model's running fold. */
async function checkFinal(keys: readonly string[]): Promise<void> {
  const instances = await driver.instances();
  const { snapshots } = await observe();
  await Promise.all([...changelogs, ...outputs, ...inputs].map((m) => m.sync()));
  for (const taskId of TASKS) {
    const p = partitionOf(taskId);
    const actives = instances.filter((i) => i.taskId === taskId && i.role === "active");
    expect(actives, `${taskId} has one active`).toHaveLength(1);
    const description = (await driver.task(actives[0]!).describe()) as TaskDescription;
    expect(description, `${taskId}: active caught up`).toMatchObject({ state: "RUNNING", lag: 0, failure: null, pendingBatches: 0 });
    const [changelog] = description.changelogs;
    expect(changelog!.checkpoint ?? 0, `${taskId}: checkpoint at the changelog end`).toBe(changelog!.end);

    // The input is what the model says was produced.
    expect(
      inputs[p]!.records.map((r) => ({ key: r.key, amount: JSON.parse(r.value).amount })),
      `orders/${p}`,
    ).toEqual(produced[p]);

    // Per key, the changelog and the output are the running fold: no repeat, no gap.
    const expected = runningTotals(produced[p]!);
    const history = (records: readonly LogRecord[]) => {
      const out = new Map<string, Totals[]>();
      for (const r of records) out.set(r.key!, [...(out.get(r.key!) ?? []), JSON.parse(r.value) as Totals]);
      return out;
    };
    expect(sorted(history(changelogs[p]!.records)), `${taskId}: changelog = history of committed writes`).toEqual(sorted(expected));
    expect(sorted(history(outputs[p]!.records)), `${taskId}: output = one total per order`).toEqual(sorted(expected));
    // Every changelog record names the input record it reflects, in order.
    expect(changelogs[p]!.records.map((r) => positionFromHeaders(r.headers)!.offset)).toEqual(produced[p]!.map((_, i) => i));

    // The active's store is the changelog folded, which is the model's fold.
    const store = snapshots.find((s) => s.name === `${taskId}@${actives[0]!.placement}`)!;
    expect(sorted(parsed(store.store)), `${taskId}: store = changelog folded`).toEqual(sorted(lastValues(history(changelogs[p]!.records))));
  }
  // And through the query path, each of the seed's keys.
  const model = lastValues(runningTotals(produced.flat()));
  for (const key of keys) expect(await driver.get(STORE, key), key).toEqual(model.get(key) ?? undefined);
}

// ---- operations ----

interface Run {
  readonly keys: readonly string[];
  readonly trace: string[];
}

/** Runs `fn`; an expected failure (an injected fault, a dead object) is noted, anything else is a bug. */
async function tolerate<T>(run: Run, what: string, fn: () => Promise<T>): Promise<T | undefined> {
  try {
    return await fn();
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    if (!EXPECTED_FAILURE.test(message)) throw error;
    run.trace.push(`  ${what}: failed as may happen: ${message.split("\n")[0]}`);
    return undefined;
  }
}

/** Appends orders partition by partition; an injected failure appends nothing, so it is retried. */
async function produce(run: Run, orders: readonly PlannedOrder[]): Promise<void> {
  const byPartition = new Map<number, { key: string; amount: number }[]>();
  for (const order of orders) {
    const key = run.keys[order.key]!;
    const p = partitionForKey(key, PARTITIONS);
    byPartition.set(p, [...(byPartition.get(p) ?? []), { key, amount: order.amount }]);
  }
  for (const [partition, list] of byPartition) {
    const records = list.map((o) => ({ key: o.key, value: JSON.stringify({ amount: o.amount }) }));
    for (let attempt = 0; ; attempt++) {
      expect(attempt, `append to orders/${partition}`).toBeLessThan(10);
      const result = await tolerate(run, `append to orders/${partition}`, () => driver.log.append({ topic: "orders", partition }, records));
      if (!result) continue;
      expect(result.baseOffset, `orders/${partition}: appended where the model says`).toBe(produced[partition]!.length);
      produced[partition]!.push(...list);
      break;
    }
  }
}

/** Kills one Durable Object the way a crashed process dies: no clean close, storage kept. */
async function kill(stub: DurableObjectStub, why: string): Promise<void> {
  await runInDurableObject(stub, (_object, state) => state.abort(`injected crash: ${why}`)).then(
    () => expect.unreachable(`${why}: the object survived`),
    () => undefined,
  );
}

async function apply(run: Run, op: Op): Promise<void> {
  switch (op.kind) {
    case "produce":
      return produce(run, op.orders);
    case "corrupt": {
      const taskId = `0_${op.task}`;
      await tolerate(run, "corrupt", async () => {
        const active = await activeInstance(driver.instances(), taskId);
        const revived = (await driver.task(active).corrupt()) as TaskDescription;
        run.trace.push(`  ${revived.id}@${revived.placement} is incarnation ${revived.incarnation}, ${revived.state}`);
      });
      return;
    }
    case "crash": {
      const response = await call(`/admin/tasks/0_${op.task}/crash`, { method: "POST" });
      run.trace.push(`  crash route: ${response.status} ${await response.text()}`);
      expect([200, 500, 503]).toContain(response.status);
      return;
    }
    case "crash-at": {
      const active = await activeInstance(env.COORDINATOR.getByName(COORDINATOR_NAME).assignments(), `0_${op.task}`);
      // A stub that saw its object die stays broken: this one is used for this plan only.
      const stub = driver.task(active);
      await stub.crash(op.step);
      await produce(run, op.orders);
      const outcome = await stub.drain().then(
        (r) => `drained ${r.worked} without reaching ${op.step}${r.worked > 0 ? "" : " (the plan stays for a later drain)"}`,
        (e: unknown) => (e instanceof Error ? e.message : String(e)),
      );
      run.trace.push(`  ${active.taskId}@${active.placement}: ${outcome}`);
      if (!outcome.startsWith("drained")) expect(outcome).toMatch(EXPECTED_FAILURE);
      return;
    }
    case "migrate": {
      const taskId = `0_${op.task}`;
      const from = (await activeInstance(env.COORDINATOR.getByName(COORDINATOR_NAME).assignments(), taskId)).placement;
      const to = from === "a" ? "b" : "a";
      await tolerate(run, `migrate ${from}→${to}`, async () => {
        const result = await env.COORDINATOR.getByName("coordinator").migrate(taskId, to);
        run.trace.push(`  ${taskId}: ${from} → ${to}, epoch ${result.epoch}`);
      });
      return;
    }
    case "log-fail": {
      const topic = op.log === "orders" ? "orders" : CHANGELOG;
      const response = await call("/admin/log/fail", { body: { topic, partition: op.partition, times: op.times } });
      expect(response.status).toBe(200);
      return;
    }
    case "pause":
      expect((await call("/admin/restore/pause", { method: "POST" })).status).toBe(200);
      return;
    case "resume":
      expect((await call("/admin/restore/resume", { body: op.maxBatches === undefined ? {} : { maxBatches: op.maxBatches } })).status).toBe(200);
      return;
    case "restore-round": {
      // Every placement's round, each to its end (one dying must not leave the other half done).
      const rounds = await Promise.allSettled(PLACEMENTS.map((p) => driver.restoreWorker(p).runRound()));
      rounds.forEach((round, i) => {
        if (round.status === "fulfilled") run.trace.push(`  restore@${PLACEMENTS[i]}: ${round.value.applied} batches applied`);
        else if (EXPECTED_FAILURE.test(String(round.reason))) run.trace.push(`  restore@${PLACEMENTS[i]}: ${String(round.reason).split("\n")[0]}`);
        else throw round.reason;
      });
      return;
    }
    case "restore-one": {
      const placement = PLACEMENTS[op.placement]!;
      const result = await tolerate(run, `restore round at ${placement}`, () => driver.restoreWorker(placement).runRound());
      if (result) run.trace.push(`  ${result.applied} batches applied, ${result.corrupted.length} corrupted`);
      return;
    }
    case "restore-worker-crash":
      return kill(driver.restoreWorker(PLACEMENTS[op.placement]!), `restore worker ${PLACEMENTS[op.placement]}`);
    case "restore-crash-at": {
      const placement = PLACEMENTS[op.placement]!;
      await driver.restoreWorker(placement).crash(op.step);
      // Paused, it is granted one batch (and stays paused after it).
      const control = await driver.restoreWorker(placement).status();
      if (control.paused && !control.budget) await driver.restoreWorker(placement).resume(1);
      // The worker dies in this round if it has a batch to read; else the plan waits for a later round.
      const outcome = await driver
        .restoreWorker(placement)
        .runRound()
        .then(
          (r) => `a round of ${r.applied} batches without reaching ${op.step}`,
          (e: unknown) => (e instanceof Error ? e.message : String(e)),
        );
      run.trace.push(`  restore@${placement}: ${outcome}`);
      if (!outcome.startsWith("a round")) expect(outcome).toMatch(EXPECTED_FAILURE);
      return;
    }
    case "coordinator-restart":
      return kill(env.COORDINATOR.getByName("coordinator"), "coordinator");
    case "crash-in": {
      const taskId = `0_${op.task}`;
      const active = await activeInstance(env.COORDINATOR.getByName(COORDINATOR_NAME).assignments(), taskId);
      const other = { taskId, placement: active.placement === "a" ? "b" : "a" };
      const migrates = op.step === "assign:after-meta" || op.step === "revoke:after-suspend";
      // A plan that no operation reaches now stays for a later one (in memory, until the object restarts).
      await driver.task(op.step === "assign:after-meta" ? other : active).crash(op.step);
      await tolerate(run, `${migrates ? "migrate" : "corrupt"} with a crash planned at ${op.step}`, async () => {
        if (migrates) await env.COORDINATOR.getByName("coordinator").migrate(taskId, other.placement);
        else await driver.task(active).corrupt();
      });
      return;
    }
    case "coordinator-crash-in": {
      const taskId = `0_${op.task}`;
      const to = (await activeInstance(env.COORDINATOR.getByName(COORDINATOR_NAME).assignments(), taskId)).placement === "a" ? "b" : "a";
      await env.COORDINATOR.getByName("coordinator").crash(op.step);
      await tolerate(run, `migrate to ${to} with the coordinator dying at ${op.step}`, () => env.COORDINATOR.getByName("coordinator").migrate(taskId, to));
      return;
    }
    case "foreign-commit": {
      const offset = produced[op.task]!.length;
      const response = await kafka(`/commit/${application.groupId}/outsider`, { body: { topic: "orders", partition: op.task, offset } });
      run.trace.push(`  commit orders/${op.task}@${offset} from outside: ${response.status}`);
      expect(response.status, "a commit of the application's group from outside is refused").not.toBe(200);
      return;
    }
    case "abort-all":
      return abortAllDurableObjects();
    case "drain": {
      const active = await activeInstance(env.COORDINATOR.getByName(COORDINATOR_NAME).assignments(), `0_${op.task}`);
      const result = await tolerate(run, "drain", () => driver.task(active).drain());
      if (result) run.trace.push(`  ${active.taskId}@${active.placement}: ${result.worked} steps, ${result.outcome}`);
      return;
    }
  }
}

/**
 * Restoration resumed and processing run until quiet, again until every task's active is RUNNING
 * with all its input processed and sent. Injected faults still pending (log failures, planned
 * crashes) may take a few attempts; a restore round that only met a failing log looks quiet too.
 */
async function settle(run: Run): Promise<void> {
  const caughtUp = async () => {
    const { snapshots, assignments } = await observe();
    return TASKS.every((taskId) => {
      const active = assignments.find((a) => a.taskId === taskId && a.role === "active");
      const snap = snapshots.find((s) => s.name === `${taskId}@${active?.placement}`);
      return active?.acknowledged && snap?.state === "RUNNING" && snap.outboxBatches === 0 && snap.position === produced[partitionOf(taskId)]!.length;
    });
  };
  for (let attempt = 0; ; attempt++) {
    expect(attempt, "settles within 20 attempts").toBeLessThan(20);
    expect((await call("/admin/restore/resume", { body: {} })).status).toBe(200);
    const done = await tolerate(run, "run until quiet", async () => {
      await driver.runUntilQuiet();
      return caughtUp();
    });
    if (done) return;
  }
}

/** One line: per instance, the coordinator's role for it, then its own role, state, incarnation and checkpoint. */
function summary({ snapshots, assignments }: { snapshots: readonly Snapshot[]; assignments: Assignments }): string {
  return snapshots
    .map((s) => {
      const assigned = assignments.find((a) => `${a.taskId}@${a.placement}` === s.name);
      const coordinator = assigned ? `${assigned.role}${assigned.acknowledged ? "" : "?"}` : "-";
      return `${s.name} ${coordinator}/${s.role} ${s.state} i${s.incarnation} c${s.checkpoint ?? "∅"}`;
    })
    .join(", ");
}

export async function runSchedule(name: string, schedule: readonly Op[]): Promise<void> {
  const run: Run = { keys: keysFor(name), trace: [] };
  let step = -1;
  try {
    await fresh();
    await driver.instances();
    for (step = 0; step < schedule.length; step++) {
      run.trace.push(`#${step} ${formatOp(schedule[step]!, run.keys)}`);
      await apply(run, schedule[step]!);
      run.trace.push(`  now: ${summary(await observe())}`);
    }
    run.trace.push("settle");
    await settle(run);
    // Faults nobody ran into are withdrawn, so the checks below do not meet them.
    await Promise.all([...inputs, ...changelogs].map((m) => env.LOG_PARTITION.getByName(`${m.topic}/${m.partition}`).injectFailures(0)));
    run.trace.push("final checks");
    await checkFinal(run.keys);
  } catch (error) {
    const report = [
      `${name} (${schedule.length} operations) failed at ${step < schedule.length ? `operation #${step}` : "the end"}:`,
      ...schedule.map((op, i) => `  #${i} ${formatOp(op, run.keys)}`),
      "what happened:",
      ...run.trace,
    ].join("\n");
    throw new Error(`${error instanceof Error ? error.message : String(error)}\n\n${report}`, { cause: error });
  }
}
