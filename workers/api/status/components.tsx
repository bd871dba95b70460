/**
 * Server-rendered pieces of the status page and the sign-in form (`hono/jsx`, no scripts): the
 * application summary, a column per placement, a card per task instance of the page with progress
 * bars for restoration and standby updates, links to the other pages, and recent corruptions,
 * migrations, skipped records and input resets. A FAILED instance wears a red badge and says the
 * record it stopped at. Everything interpolated is escaped by JSX.
 */
import type { Child } from "hono/jsx";
import type { LifecycleEvent } from "../../../src/task/lifecycle";
import { ageMs } from "../../../src/task/input-lag";
import { remainingToRestore, restoreProgress, type ClusterSnapshot, type InstanceView, type PlacementView } from "./snapshot";

export const REFRESH_SECONDS = 2;

const STYLE = `
:root { color-scheme: light; --fg:#1d2330; --muted:#667085; --line:#d8dde6; --card:#fff; --bg:#f4f6f9;
  --active:#1f6feb; --standby:#8250df; --idle:#98a2b3; --ok:#1a7f37; --warn:#bf8700; --bad:#cf222e; }
* { box-sizing: border-box; }
body { margin:0; font: 14px/1.4 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color:var(--fg); background:var(--bg); }
header.top { display:flex; align-items:center; gap:16px; padding:12px 20px; background:#0d1b2a; color:#fff; }
header.top h1 { font-size:18px; margin:0; }
header.top .meta { color:#c9d1d9; font-size:13px; flex:1; }
header.top form { margin:0; }
header.top button { font:inherit; background:transparent; color:#fff; border:1px solid #8b949e; border-radius:6px; padding:3px 10px; cursor:pointer; }
main { padding:16px 20px; }
.placements { display:grid; gap:16px; align-items:start; }
.placement > h2 { font-size:15px; margin:0 0 2px; }
.placement > .note { color:var(--muted); font-size:12px; margin:0 0 8px; }
.card { background:var(--card); border:1px solid var(--line); border-left:4px solid var(--idle); border-radius:8px; padding:10px 12px; margin-bottom:10px; }
.card.active { border-left-color:var(--active); } .card.standby { border-left-color:var(--standby); } .card.down, .card.failed { border-left-color:var(--bad); }
.card h3 { font-size:15px; margin:0 0 4px; display:flex; gap:6px; align-items:center; flex-wrap:wrap; }
.badge { font-size:11px; font-weight:600; letter-spacing:.02em; border-radius:10px; padding:1px 8px; background:#eef1f5; color:var(--fg); }
.badge.active { background:#ddeafe; color:#0b4fb3; } .badge.standby { background:#efe6fd; color:#5e2bb8; }
.badge.RUNNING { background:#dafbe1; color:var(--ok); } .badge.RESTORING { background:#fff3c4; color:#7d5a00; }
.badge.UPDATING { background:#efe6fd; color:#5e2bb8; } .badge.down, .badge.FAILED { background:#ffe1e1; color:var(--bad); }
.facts { display:flex; flex-wrap:wrap; gap:4px 14px; color:var(--muted); font-size:12px; margin:2px 0 6px; }
.facts b { color:var(--fg); font-weight:600; }
.bar { margin:6px 0; }
.bar .label { display:flex; justify-content:space-between; font-size:12px; gap:8px; }
.bar progress { width:100%; height:12px; accent-color:var(--active); }
.bar.standby progress { accent-color:var(--standby); }
.events { font-size:12px; color:var(--muted); margin:4px 0 0; padding-left:16px; }
.events .wipe, .events .failed { color:var(--bad); } .events .migrated-away, .events .skipped, .events .offsets-reset { color:var(--warn); }
section.recent { margin-top:8px; }
section.recent h2 { font-size:15px; }
table { border-collapse:collapse; background:var(--card); border:1px solid var(--line); font-size:13px; }
th, td { text-align:left; padding:4px 10px; border-bottom:1px solid var(--line); }
.muted { color:var(--muted); }
form.login { max-width:360px; margin:12vh auto; background:var(--card); border:1px solid var(--line); border-radius:10px; padding:22px; }
form.login h1 { font-size:18px; margin:0 0 12px; }
form.login input { width:100%; font:inherit; padding:7px 9px; border:1px solid var(--line); border-radius:6px; margin:6px 0 12px; }
form.login button { font:inherit; background:var(--active); color:#fff; border:0; border-radius:6px; padding:7px 14px; cursor:pointer; }
.error { color:var(--bad); }
section.summary { display:flex; flex-wrap:wrap; gap:8px 24px; align-items:center; background:var(--card); border:1px solid var(--line); border-radius:8px; padding:10px 14px; margin-bottom:16px; }
section.summary .stat b { font-size:16px; }
section.summary .bar { flex:1 1 280px; }
nav.pages { display:flex; gap:16px; margin:4px 0 14px; font-size:13px; }
`;

const numberFormat = new Intl.NumberFormat("en-US", { maximumFractionDigits: 1 });
export const fmt = (n: number): string => numberFormat.format(n);

export function ago(at: number, now: number): string {
  return `${duration(now - at)} ago`;
}

/** A duration in words: seconds, minutes or hours. */
export function duration(ms: number): string {
  const seconds = Math.max(0, Math.round(ms / 1000));
  if (seconds < 90) return `${seconds} s`;
  if (seconds < 90 * 60) return `${Math.round(seconds / 60)} min`;
  return `${Math.round(seconds / 3600)} h`;
}

export function Page(props: { title: string; refresh?: boolean; children?: Child }) {
  return (
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        {props.refresh ? <meta http-equiv="refresh" content={String(REFRESH_SECONDS)} /> : null}
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <title>{props.title}</title>
        {/* A constant: inserted as is, since escaping would break its selectors and quotes. */}
        <style dangerouslySetInnerHTML={{ __html: STYLE }} />
      </head>
      <body>{props.children}</body>
    </html>
  );
}

/** A bar with its numbers: `<progress>` for the eye, text for everyone. */
export function ProgressBar(props: { kind: "restore" | "standby"; instance: string; done: number; total: number; rate: number; remaining: number }) {
  const { done, total } = props;
  const percent = total > 0 ? Math.min(100, Math.floor((done / total) * 100)) : 100;
  const title = props.kind === "restore" ? "Restoring" : "Standby";
  return (
    <div class={`bar ${props.kind}`}>
      <div class="label">
        <span>
          {title} <b>{fmt(done)}</b> / {fmt(total)} records ({percent}%)
        </span>
        <span>
          {fmt(props.rate)} rec/s · {fmt(props.remaining)} left
        </span>
      </div>
      <progress max={String(Math.max(total, 1))} value={String(total > 0 ? Math.min(done, total) : 1)} data-instance={props.instance} data-kind={props.kind}>
        {percent}%
      </progress>
    </div>
  );
}

/** Events the "recent" table lists: corruptions, migrations, input lost to retention, records skipped and input resets by operators. */
const RECENT = new Set<LifecycleEvent["event"]>(["wipe", "migrated-away", "input-reset", "skipped", "offsets-reset"]);
const NOTABLE = new Set<LifecycleEvent["event"]>([
  "wipe",
  "migrated-away",
  "running",
  "assign",
  "input-reset",
  "failed",
  "resumed",
  "skipped",
  "offsets-reset",
]);

/** How the "recent" table names an event. */
const RECENT_WHAT: Partial<Record<LifecycleEvent["event"], string>> = {
  wipe: "corrupted, wiped",
  "migrated-away": "migrated away",
  "input-reset": "input lost to retention",
  skipped: "record skipped by an operator",
  "offsets-reset": "input reset by an operator",
};

function InstanceCard(props: { instance: InstanceView; now: number }) {
  const { instance, now } = props;
  const name = `${instance.id}@${instance.placement}`;
  if (!instance.up) {
    return (
      <article class="card down" data-instance={name}>
        <h3>
          {instance.id} <span class={`badge ${instance.role}`}>{instance.role}</span> <span class="badge down">not answering</span>
        </h3>
        <div class="facts">
          <span>
            epoch <b>{instance.epoch}</b>
          </span>
        </div>
      </article>
    );
  }
  const { counters } = instance;
  const progress = restoreProgress(instance);
  const remaining = remainingToRestore(instance);
  const latency = counters.commitLatency;
  const events = instance.lifecycle.recent
    .filter((e) => NOTABLE.has(e.event))
    .slice(-3)
    .reverse();
  const failed = instance.state === "FAILED";
  const error = instance.error;
  return (
    <article class={`card ${instance.role}${failed ? " failed" : ""}`} data-instance={name} data-state={instance.state}>
      <h3>
        {instance.id} <span class={`badge ${instance.role}`}>{instance.role}</span> <span class={`badge ${instance.state}`}>{instance.state}</span>
      </h3>
      <div class="facts">
        <span>
          epoch <b>{instance.epoch}</b>
        </span>
        <span>
          incarnation <b>{instance.incarnation}</b>
        </span>
        <span>
          lag <b data-lag={name}>{fmt(instance.lag)}</b>
          {instance.lagMs > 0 ? <> (oldest waiting {duration(instance.lagMs)})</> : null}
        </span>
        {instance.role === "active" ? (
          <span>
            processed <b>{fmt(counters.processed.total)}</b> ({fmt(counters.processed.rate)}/s)
          </span>
        ) : null}
        {latency.count > 0 ? (
          <span>
            commit <b>{fmt(latency.sumMs / latency.count)} ms</b> avg, {fmt(latency.lastMs ?? 0)} ms last
          </span>
        ) : null}
        {instance.lifecycle.skips > 0 ? (
          <span>
            skipped <b data-skipped={name}>{fmt(instance.lifecycle.skips)}</b>
          </span>
        ) : null}
        {instance.pendingBatches > 0 ? (
          <span>
            unsent batches <b>{instance.pendingBatches}</b>
          </span>
        ) : null}
      </div>
      {instance.state === "RESTORING" ? (
        <ProgressBar kind="restore" instance={name} done={progress.restored} total={progress.total} rate={counters.restored.rate} remaining={remaining} />
      ) : null}
      {instance.state === "UPDATING" ? (
        <ProgressBar kind="standby" instance={name} done={progress.restored} total={progress.total} rate={counters.standbyUpdated.rate} remaining={remaining} />
      ) : null}
      {error ? (
        <p class="error" data-error={name}>
          stopped{error.topic !== null ? ` at ${error.topic}/${error.partition} offset ${error.offset}` : ""}: {error.message}
          {failed && error.topic !== null ? <span class="muted"> · resume, skip the record or reset the input (docs/operations.md)</span> : null}
        </p>
      ) : null}
      {events.length > 0 ? (
        <ul class="events">
          {events.map((e) => (
            <li class={e.event}>
              {e.event} · epoch {e.epoch} · incarnation {e.incarnation} · {ago(e.at, now)}
            </li>
          ))}
        </ul>
      ) : null}
    </article>
  );
}

const ROLE_ORDER = { active: 0, standby: 1, idle: 2 } as const;

/** The whole application at a glance, from the restore worker shards' summaries (not from the page). */
function SummarySection(props: { snapshot: ClusterSnapshot }) {
  const { summary } = props.snapshot;
  const states = Object.entries(summary.byState).sort(([a], [b]) => a.localeCompare(b));
  const { restored, total } = summary.restoring;
  return (
    <section class="summary" data-summary="application">
      <span class="stat">
        <b data-summary-instances>{fmt(summary.instances)}</b> task instances
      </span>
      {states.map(([state, n]) => (
        <span class="stat" data-state-count={state}>
          <b>{fmt(n)}</b> {state}
        </span>
      ))}
      <span class="stat">
        lag <b data-summary-lag>{fmt(summary.lag)}</b>
        {summary.oldestWaiting !== null ? <> · oldest waiting {duration(ageMs(summary.oldestWaiting, props.snapshot.at))}</> : null}
      </span>
      {summary.failed > 0 ? (
        <span class="stat error">
          <b>{fmt(summary.failed)}</b> stopped
        </span>
      ) : null}
      {summary.reported < summary.instances ? <span class="stat muted">{fmt(summary.instances - summary.reported)} not reported yet</span> : null}
      {total > 0 ? (
        <div class="bar restore">
          <div class="label">
            <span>
              Restoring <b>{fmt(restored)}</b> / {fmt(total)} records ({total > 0 ? Math.min(100, Math.floor((restored / total) * 100)) : 100}%)
            </span>
          </div>
          <progress max={String(total)} value={String(Math.min(restored, total))} data-summary="restoring" />
        </div>
      ) : null}
    </section>
  );
}

/** Links to the first and the next page of instances. */
function Pages(props: { snapshot: ClusterSnapshot }) {
  const { snapshot } = props;
  if (snapshot.first && snapshot.next === null) return null;
  return (
    <nav class="pages">
      <span class="muted">
        {snapshot.instances.length} of {fmt(snapshot.summary.instances)} instances on this page
      </span>
      {snapshot.first ? null : <a href="/">first page</a>}
      {snapshot.next === null ? null : (
        <a href={`/?cursor=${snapshot.next}`} rel="next">
          next page
        </a>
      )}
    </nav>
  );
}

function PlacementColumn(props: { placement: PlacementView; instances: InstanceView[]; now: number }) {
  const { placement } = props;
  const restore =
    placement.restorePaused === null
      ? "restore worker not answering"
      : placement.restorePaused
        ? placement.restoreBudget
          ? `restoration paused, ${placement.restoreBudget} batches allowed`
          : "restoration paused"
        : "restoration running";
  const sorted = [...props.instances].sort((a, b) => ROLE_ORDER[a.role] - ROLE_ORDER[b.role] || a.id.localeCompare(b.id));
  const roles = placement.summary.byRole;
  const shards = placement.shards > 1 ? ` · ${placement.shardsAnswering} of ${placement.shards} restore workers answering` : "";
  return (
    <section class="placement" data-placement={placement.name}>
      <h2>Placement {placement.name}</h2>
      <p class="note">
        {placement.configured
          ? `${fmt(roles.active ?? 0)} active · ${fmt(roles.standby ?? 0)} standby · ${fmt(roles.idle ?? 0)} idle · ${sorted.length} on this page · ${restore}${shards}`
          : `${sorted.length} instances on this page · no longer configured`}
      </p>
      {sorted.map((instance) => (
        <InstanceCard instance={instance} now={props.now} />
      ))}
    </section>
  );
}

function RecentTable(props: { snapshot: ClusterSnapshot }) {
  const rows = props.snapshot.instances
    .flatMap((i) => (i.up ? i.lifecycle.recent.filter((e) => RECENT.has(e.event)).map((e) => ({ ...e, task: i.id, placement: i.placement })) : []))
    .sort((a, b) => b.at - a.at)
    .slice(0, 10);
  return (
    <section class="recent">
      <h2>Recent corruptions, migrations, input lost to retention, skipped records and input resets</h2>
      {rows.length === 0 ? (
        <p class="muted">None since these instances started keeping history.</p>
      ) : (
        <table>
          <thead>
            <tr>
              <th>when</th>
              <th>task</th>
              <th>placement</th>
              <th>what</th>
              <th>epoch</th>
              <th>incarnation</th>
              <th>detail</th>
            </tr>
          </thead>
          <tbody>
            {rows.map((r) => (
              <tr>
                <td>{ago(r.at, props.snapshot.at)}</td>
                <td>{r.task}</td>
                <td>{r.placement}</td>
                <td>{RECENT_WHAT[r.event] ?? r.event}</td>
                <td>{r.epoch}</td>
                <td>{r.incarnation}</td>
                <td>{r.detail ?? ""}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}

export function StatusPage(props: { snapshot: ClusterSnapshot; application: string; signedIn: boolean }) {
  const { snapshot } = props;
  const time = new Date(snapshot.at).toISOString().slice(11, 19);
  return (
    <Page title="Edge Streams — status" refresh>
      <header class="top">
        <h1>Edge Streams</h1>
        <span class="meta">
          application <b>{props.application}</b> · {fmt(snapshot.summary.instances)} task instances · updated {time} UTC · refreshes every {REFRESH_SECONDS} s
        </span>
        {props.signedIn ? (
          <form method="post" action="/logout">
            <button type="submit">Sign out</button>
          </form>
        ) : null}
      </header>
      <main>
        {snapshot.shutdown ? (
          <p class="error shutdown">
            Application shut down: task {snapshot.shutdown.taskId} at {snapshot.shutdown.placement} failed ({snapshot.shutdown.reason}). Every task is stopped
            until <code>POST /admin/application/resume</code>.
          </p>
        ) : null}
        <SummarySection snapshot={snapshot} />
        <Pages snapshot={snapshot} />
        <div class="placements" style={`grid-template-columns: repeat(${Math.max(1, snapshot.placements.length)}, minmax(260px, 1fr))`}>
          {snapshot.placements.map((placement) => (
            <PlacementColumn placement={placement} instances={snapshot.instances.filter((i) => i.placement === placement.name)} now={snapshot.at} />
          ))}
        </div>
        <RecentTable snapshot={snapshot} />
      </main>
    </Page>
  );
}

export function LoginPage(props: { error?: string }) {
  return (
    <Page title="Edge Streams — sign in">
      <form class="login" method="post" action="/login">
        <h1>Edge Streams status</h1>
        <label for="token">API token</label>
        <input id="token" name="token" type="password" autocomplete="current-password" required autofocus />
        {props.error ? <p class="error">{props.error}</p> : null}
        <button type="submit">Sign in</button>
      </form>
    </Page>
  );
}
