/** Helpers over the example application's HTTP API, shared by the scenarios. */
import { call, post } from "./client.mjs";
import { waitFor } from "./stats.mjs";

/** The active instance of `taskId` as `GET /tasks` describes it; throws when there is none, or when it failed. */
export async function activeTask(app, taskId) {
  const { body } = await call(app.baseUrl, "GET", "/tasks", { token: app.token });
  const task = body.tasks.find((t) => t.id === taskId && t.role === "active");
  if (!task) throw new Error(`no active instance of task ${taskId} in ${JSON.stringify(body)}`);
  if (task.failure) throw new Error(`task ${taskId} failed: ${task.failure}`);
  return task;
}

/**
 * One order for each of `count` customers of task 0_0 (partition 0 of `orders`; `<prefix><n>` from
 * the bench Worker, customer n ordering amount n), ingested 1000 per request; then waits until the
 * task has processed them all (RUNNING, lag 0, its changelog holding at least `count` records).
 * Returns the customers, in order.
 */
export async function oneOrderEach(baseUrl, app, { count, prefix, timeoutMs }) {
  const perRequest = 1000;
  const customers = (await call(baseUrl, "GET", `/bench/keys?partitions=4&partition=0&count=${count}&prefix=${prefix}`)).body.keys;
  for (let start = 0; start < count; start += perRequest) {
    const batch = customers.slice(start, start + perRequest).map((key, i) => ({ key, value: { amount: start + i } }));
    await call(app.baseUrl, "POST", "/topics/orders/records", { token: app.token, body: { records: batch } });
  }
  let last;
  await waitFor(
    `task 0_0 to process ${count} orders`,
    async () => {
      last = await activeTask(app, "0_0");
      return last.state === "RUNNING" && last.lag === 0 && last.changelogs[0].end >= count ? last : undefined;
    },
    { timeoutMs, intervalMs: 200, last: () => JSON.stringify(last) },
  );
  return customers;
}

/**
 * Corrupts the active instance of `taskId` (`POST /admin/tasks/:id/corrupt`: wiped and revived)
 * and waits until its new incarnation is RUNNING and `restored(task)` holds for its description.
 * Returns the milliseconds from the corrupt call, and the task as last described.
 */
export async function corruptAndRestore(app, taskId, restored, { what, timeoutMs, intervalMs }) {
  const started = performance.now();
  const corrupted = (await call(app.baseUrl, "POST", `/admin/tasks/${taskId}/corrupt`, { token: app.token })).body.task;
  let last;
  await waitFor(
    what,
    async () => {
      last = await activeTask(app, taskId);
      return last.state === "RUNNING" && last.incarnation >= corrupted.incarnation && restored(last) ? last : undefined;
    },
    { timeoutMs, intervalMs, last: () => JSON.stringify(last) },
  );
  return { ms: performance.now() - started, task: last };
}

/** The restore baselines: milliseconds to insert `records` ~100-byte records into one Durable Object's SQLite, `batch` per RPC and transaction (the bench Worker). */
export async function sqliteInsertMs(baseUrl, records, batch, run) {
  return (await post(baseUrl, "/bench/sqlite-insert", { records, batch, valueBytes: 90, run }))["sqlite-row"].rpcMs;
}

/**
 * Every instance as it describes itself now (all pages of `GET /tasks`): live, unlike the summary,
 * which trails by up to the instances' report interval.
 */
export async function describeAll(app) {
  const all = [];
  let cursor = null;
  do {
    const { body } = await call(app.baseUrl, "GET", `/tasks?limit=500${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`, { token: app.token });
    all.push(...body.tasks);
    cursor = body.next;
  } while (cursor);
  return all;
}

/**
 * Polls (every second) until all `instances` run (actives) or stand by (standbys) with lag 0 and
 * nothing left to send; answers the polls made.
 */
export async function quiet(app, instances, what, timeoutMs) {
  let polls = 0;
  let last;
  await waitFor(
    what,
    async () => {
      polls++;
      const all = await describeAll(app);
      const behind = all.filter((t) => !(t.state === "RUNNING" || t.state === "UPDATING") || t.lag !== 0 || t.pendingBatches !== 0 || t.failure);
      last = `${all.length} instances, ${behind.length} not caught up: ${JSON.stringify(behind.slice(0, 3))}`;
      return all.length === instances && behind.length === 0 ? true : undefined;
    },
    { timeoutMs, intervalMs: 1_000, last: () => last },
  );
  return polls;
}
