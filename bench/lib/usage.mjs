/**
 * What the counting app (bench/counting-app.ts, `GET /bench/usage`) counted, turned into the
 * bench's cost keys: tallies by category of object (the example's topics and a task instance's
 * role), differences between two moments, per record, and in dollars (./prices.mjs).
 *
 * Categories: `input`, `changelog`, `output` and `topic` (any other topic: dead letters) for log
 * partitions by their topic; `task` (active instances) and `standby` for task objects by the role
 * `GET /tasks` gives them; `restore`, `coordinator`, `group` for the other objects.
 */
import { call } from "./client.mjs";
import { costPerMillionUsd, storedUsdPerMillionPerMonth } from "./prices.mjs";

export const CATEGORIES = ["input", "changelog", "output", "topic", "task", "standby", "restore", "coordinator", "group"];
/** The object kinds of the counting app, for stored sizes and idle wake-ups. */
export const KINDS = ["task", "partition", "coordinator", "restore", "group"];

/** The counts so far: `{ "<kind>:<name>": ObjectUsage }`. */
export async function objectsUsage(app) {
  return (await call(app.baseUrl, "GET", "/bench/usage")).body.objects;
}

/** The example's topics: orders in, totals out, its store's changelog. */
function topicCategory(topic) {
  if (topic === "orders") return "input";
  if (topic === "totals") return "output";
  if (topic.endsWith("-changelog")) return "changelog";
  return "topic";
}

/**
 * A function from an object's key to its category; `standbys` holds the object names of the task
 * instances that are standbys (`<task>@<placement>`, from `GET /tasks`).
 */
export function categorize(standbys) {
  return (key) => {
    const colon = key.indexOf(":");
    const kind = key.slice(0, colon);
    const name = key.slice(colon + 1);
    if (kind === "partition") return topicCategory(name.slice(0, name.lastIndexOf("/")));
    if (kind === "task") return standbys.has(name) ? "standby" : "task";
    return kind;
  };
}

/** The object names of the standby instances among `tasks` (descriptions from `GET /tasks`). */
export function standbyNames(tasks) {
  return new Set(tasks.filter((t) => t.role === "standby").map((t) => `${t.id}@${t.placement}`));
}

/**
 * The counts as one flat map: totals (`rowsWritten`, `rowsRead`, `requests` with alarms), and per
 * category `written:<category>`, `written:<category>:<table>`, `requests:<category>` (RPC calls
 * and alarms), `calls:<category>` (RPC calls alone) and `alarms:<category>`.
 */
export function tally(objects, categoryOf) {
  const out = { rowsWritten: 0, rowsRead: 0, requests: 0 };
  const add = (key, n) => {
    if (n) out[key] = (out[key] ?? 0) + n;
  };
  for (const [key, u] of Object.entries(objects)) {
    const category = categoryOf(key);
    add("rowsWritten", u.rowsWritten);
    add("rowsRead", u.rowsRead);
    add("requests", u.requests + u.alarms);
    add(`written:${category}`, u.rowsWritten);
    for (const [table, rows] of Object.entries(u.written)) add(`written:${category}:${table}`, rows);
    add(`requests:${category}`, u.requests + u.alarms);
    add(`calls:${category}`, u.requests);
    add(`alarms:${category}`, u.alarms);
  }
  return out;
}

/**
 * What one `poll()` costs (the bench's own polling, to be taken off a measurement), key by key the
 * least of `times` polls: whatever else the application does meanwhile only adds.
 */
export async function pollCost(app, categoryOf, poll, times = 3) {
  const deltas = [];
  for (let i = 0; i < times; i++) {
    const before = tally(await objectsUsage(app), categoryOf);
    await poll();
    deltas.push(delta(tally(await objectsUsage(app), categoryOf), before));
  }
  const out = {};
  for (const key of new Set(deltas.flatMap(Object.keys))) out[key] = Math.min(...deltas.map((d) => d[key] ?? 0));
  return out;
}

/** `after - before`, key by key. */
export function delta(after, before) {
  const out = {};
  for (const [key, value] of Object.entries(after)) out[key] = value - (before[key] ?? 0);
  return out;
}

/** `spent` less `polls` times what one poll cost (`perPoll`), key by key, never below 0. */
export function lessPolls(spent, polls, perPoll) {
  const out = {};
  for (const [key, value] of Object.entries(spent)) out[key] = Math.max(0, value - polls * (perPoll[key] ?? 0));
  return out;
}

/** Two decimals from 1 up, four below (per-record counts under load are hundredths). */
export function rounded(x) {
  return Number(x.toFixed(Math.abs(x) >= 1 ? 2 : 4));
}

/**
 * The per-record keys of a measurement (`net`: a tally's difference over `records` orders),
 * each prefixed with `prefix`:
 *   rows_written_per_record, rows_read_per_record, do_requests_per_record, cost_per_million_usd;
 *   rows_written_per_record_<category> and do_requests_per_record_<category> for every category;
 *   rows_written_per_record_<category>_<table> for every table written (absent: below 0.00005).
 */
export function perRecordKeys(prefix, net, records) {
  const per = (key) => (net[key] ?? 0) / records;
  const out = {
    [`${prefix}rows_written_per_record`]: rounded(per("rowsWritten")),
    [`${prefix}rows_read_per_record`]: rounded(per("rowsRead")),
    [`${prefix}do_requests_per_record`]: rounded(per("requests")),
    [`${prefix}cost_per_million_usd`]: Number(
      costPerMillionUsd({ rowsWritten: per("rowsWritten"), rowsRead: per("rowsRead"), requests: per("requests") }).toFixed(3),
    ),
  };
  for (const category of CATEGORIES) {
    out[`${prefix}rows_written_per_record_${category}`] = rounded(per(`written:${category}`));
    out[`${prefix}do_requests_per_record_${category}`] = rounded(per(`requests:${category}`));
  }
  const tables = Object.keys(net)
    .filter((key) => key.startsWith("written:") && key.split(":").length === 3 && net[key] > 0)
    .sort();
  for (const key of tables) {
    const [, category, table] = key.split(":");
    const value = rounded(per(key));
    // `_schema` (the migrations' version row) reads `schema`.
    if (value > 0) out[`${prefix}rows_written_per_record_${category}_${table.toLowerCase().replace(/^_+/, "")}`] = value;
  }
  return out;
}

/** The stored bytes (database sizes) of every object, summed. */
export function storedBytes(objects) {
  return Object.values(objects).reduce((sum, u) => sum + u.bytes, 0);
}

/**
 * Storage as billed: `stored_bytes_per_object_empty_<kind>` (the least size an object of the kind
 * had once constructed: its schema; absent for a kind with no object), `stored_bytes_per_object_empty`
 * (the largest of those), `stored_bytes_per_record_marginal` (growth of every object's database
 * per order between `before` and `after`), its dollars per million orders a month, and the
 * order's own serialized size for comparison; each key prefixed with `prefix`.
 */
export function storageKeys(prefix, { before, after, records, orderBytes }) {
  const out = {};
  if (!prefix) {
    let largest = 0;
    for (const kind of KINDS) {
      const fresh = Object.entries(after)
        .filter(([key, u]) => key.startsWith(`${kind}:`) && u.freshBytes !== null)
        .map(([, u]) => u.freshBytes);
      if (fresh.length === 0) continue;
      out[`stored_bytes_per_object_empty_${kind}`] = Math.min(...fresh);
      largest = Math.max(largest, Math.min(...fresh));
    }
    out.stored_bytes_per_object_empty = largest;
  }
  const marginal = (storedBytes(after) - storedBytes(before)) / records;
  out[`${prefix}stored_bytes_per_record_marginal`] = Math.round(marginal);
  out[`${prefix}stored_usd_per_million_per_month`] = Number(storedUsdPerMillionPerMonth(marginal).toFixed(3));
  out[`${prefix}order_serialized_bytes`] = Number(orderBytes.toFixed(1));
  return out;
}

/** Requests and alarms per minute over `ms`, in total and per object kind (`<prefix>` and `<prefix>_<kind>`). */
export function wakeupKeys(prefix, after, before, ms) {
  const perMinute = (n) => rounded((n * 60_000) / ms);
  const byKind = Object.fromEntries(KINDS.map((kind) => [kind, 0]));
  for (const [key, u] of Object.entries(after)) {
    const kind = key.slice(0, key.indexOf(":"));
    const was = before[key] ?? { requests: 0, alarms: 0 };
    byKind[kind] += u.requests + u.alarms - was.requests - was.alarms;
  }
  const out = { [prefix]: perMinute(Object.values(byKind).reduce((a, b) => a + b, 0)) };
  for (const kind of KINDS) out[`${prefix}_${kind}`] = perMinute(byKind[kind]);
  return out;
}

/** What woke each object between two moments: `{ "<kind>:<name>": { alarm: n, <method>: n } }`, only objects woken. */
export function wakeupDetail(after, before) {
  const out = {};
  for (const [key, u] of Object.entries(after)) {
    const was = before[key] ?? { alarms: 0, methods: {} };
    const calls = {};
    if (u.alarms > was.alarms) calls.alarm = u.alarms - was.alarms;
    for (const [method, n] of Object.entries(u.methods ?? {})) if (n > (was.methods?.[method] ?? 0)) calls[method] = n - (was.methods?.[method] ?? 0);
    if (Object.keys(calls).length > 0) out[key] = calls;
  }
  return out;
}

/** `wakeupDetail`'s calls summed by category of object: `{ "<category>": { alarm: n, <method>: n } }`. */
export function callsByCategory(detail, categoryOf) {
  const out = {};
  for (const [key, calls] of Object.entries(detail)) {
    const category = categoryOf(key);
    out[category] ??= {};
    for (const [method, n] of Object.entries(calls)) out[category][method] = (out[category][method] ?? 0) + n;
  }
  return out;
}

/**
 * With what the quiet period after a measurement wrote (`settled`: a tally's difference; progress
 * the objects write within seconds, their backstop alarms, quiet compaction), per record:
 * `<prefix>rows_written_per_record_settled`, `<prefix>do_requests_per_record_settled`.
 */
export function settledKeys(prefix, net, settled, records) {
  return {
    [`${prefix}rows_written_per_record_settled`]: rounded(((net.rowsWritten ?? 0) + (settled.rowsWritten ?? 0)) / records),
    [`${prefix}do_requests_per_record_settled`]: rounded(((net.requests ?? 0) + (settled.requests ?? 0)) / records),
  };
}
