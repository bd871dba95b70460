/**
 * Server-rendered pieces of the status page and the sign-in form (`hono/jsx`): the
 * application summary, a column per placement, a card per task instance of the page with progress
 * bars for restoration and standby updates, links to the other pages, and recent corruptions,
 * migrations, skipped records and input resets. A FAILED instance wears a red badge and says the
 * record it stopped at. Everything interpolated is escaped by JSX. Each piece the live page
 * replaces in place carries `data-part` (its name in `GET /tasks/watch?format=html`, live.tsx).
 */
import type { Child } from "hono/jsx";
import type { LifecycleEvent } from "../../../src/task/lifecycle";
import { instanceName } from "../../../src/names";
import { ageMs } from "../../../src/task/input-lag";
import { STYLE } from "./style";
import { remainingToRestore, restoreProgress, type ClusterSnapshot, type InstanceView, type PlacementView } from "./snapshot";

/** Without JavaScript, the page refreshes itself this often (a `<noscript>` refresh). */
export const REFRESH_SECONDS = 2;

const numberFormat = new Intl.NumberFormat("en-US", { maximumFractionDigits: 1 });
export const fmt = (n: number): string => numberFormat.format(n);

export function ago(at: number, now: number): string {
  return `${duration(now - at)} ago`;
}

/** A past moment as words ("5 s ago"); the live page's script keeps the words current (live.tsx). */
function Ago(props: { at: number; now: number }) {
  return <time data-at={String(props.at)}>{ago(props.at, props.now)}</time>;
}

/** A duration in words: seconds, minutes or hours. */
export function duration(ms: number): string {
  const seconds = Math.max(0, Math.round(ms / 1000));
  if (seconds < 90) return `${seconds} s`;
  if (seconds < 90 * 60) return `${Math.round(seconds / 60)} min`;
  return `${Math.round(seconds / 3600)} h`;
}

export function Page(props: { title: string; refresh?: boolean; script?: { nonce: string; text: string }; children?: Child }) {
  return (
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        {props.refresh ? (
          <noscript>
            <meta http-equiv="refresh" content={String(REFRESH_SECONDS)} />
          </noscript>
        ) : null}
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <title>{props.title}</title>
        {/* A constant: inserted as is, since escaping would break its selectors and quotes. */}
        <style dangerouslySetInnerHTML={{ __html: STYLE }} />
      </head>
      <body>
        {props.children}
        {/* A constant of this module: inserted as is, allowed by its nonce (routes/status-page.tsx). */}
        {props.script ? <script nonce={props.script.nonce} dangerouslySetInnerHTML={{ __html: props.script.text }} /> : null}
      </body>
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

export function InstanceCard(props: { instance: InstanceView; now: number }) {
  const { instance, now } = props;
  const name = instanceName({ taskId: instance.id, placement: instance.placement });
  if (!instance.up) {
    return (
      <article class="card down" data-instance={name} data-part={`card:${name}`}>
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
    <article class={`card ${instance.role}${failed ? " failed" : ""}`} data-instance={name} data-state={instance.state} data-part={`card:${name}`}>
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
              {e.event} · epoch {e.epoch} · incarnation {e.incarnation} · <Ago at={e.at} now={now} />
            </li>
          ))}
        </ul>
      ) : null}
    </article>
  );
}

const ROLE_ORDER = { active: 0, standby: 1, idle: 2 } as const;

/** The whole application at a glance, from the restore worker shards' summaries (not from the page). */
export function SummarySection(props: { snapshot: ClusterSnapshot }) {
  const { summary } = props.snapshot;
  const states = Object.entries(summary.byState).sort(([a], [b]) => a.localeCompare(b));
  const { restored, total } = summary.restoring;
  return (
    <section class="summary" data-summary="application" data-part="summary">
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

/** Links to the first and the next page of instances (an empty part when there is one page). */
export function Pages(props: { snapshot: ClusterSnapshot }) {
  const { snapshot } = props;
  if (snapshot.first && snapshot.next === null) return <nav class="pages" data-part="pages" hidden />;
  return (
    <nav class="pages" data-part="pages">
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

/** The line under a placement's name: its instances by role, and its restore workers. */
export function PlacementNote(props: { placement: PlacementView; onPage: number }) {
  const { placement, onPage } = props;
  const restore =
    placement.restorePaused === null
      ? "restore worker not answering"
      : placement.restorePaused
        ? placement.restoreBudget
          ? `restoration paused, ${placement.restoreBudget} batches allowed`
          : "restoration paused"
        : "restoration running";
  const roles = placement.summary.byRole;
  const shards = placement.shards > 1 ? ` · ${placement.shardsAnswering} of ${placement.shards} restore workers answering` : "";
  return (
    <p class="note" data-part={`note:${placement.name}`}>
      {placement.configured
        ? `${fmt(roles.active ?? 0)} active · ${fmt(roles.standby ?? 0)} standby · ${fmt(roles.idle ?? 0)} idle · ${onPage} on this page · ${restore}${shards}`
        : `${onPage} instances on this page · no longer configured`}
    </p>
  );
}

/** The instances of a placement on this page, as the page orders them (active, standby, idle; by task). */
export function placementInstances(snapshot: ClusterSnapshot, placement: string): InstanceView[] {
  return snapshot.instances.filter((i) => i.placement === placement).sort((a, b) => ROLE_ORDER[a.role] - ROLE_ORDER[b.role] || a.id.localeCompare(b.id));
}

/** A column per placement, each with its note and its instances' cards. */
export function Placements(props: { snapshot: ClusterSnapshot }) {
  const { snapshot } = props;
  return (
    <div class="placements" data-part="placements" style={`grid-template-columns: repeat(${Math.max(1, snapshot.placements.length)}, minmax(260px, 1fr))`}>
      {snapshot.placements.map((placement) => {
        const sorted = placementInstances(snapshot, placement.name);
        return (
          <section class="placement" data-placement={placement.name}>
            <h2>Placement {placement.name}</h2>
            <PlacementNote placement={placement} onPage={sorted.length} />
            {sorted.map((instance) => (
              <InstanceCard instance={instance} now={snapshot.at} />
            ))}
          </section>
        );
      })}
    </div>
  );
}

/** The shutdown banner (an empty part while the application runs). */
export function Shutdown(props: { snapshot: ClusterSnapshot }) {
  const { shutdown } = props.snapshot;
  if (!shutdown) return <div data-part="shutdown" hidden />;
  return (
    <p class="error shutdown" data-part="shutdown">
      Application shut down: task {shutdown.taskId} at {shutdown.placement} failed ({shutdown.reason}). Every task is stopped until{" "}
      <code>POST /admin/application/resume</code>.
    </p>
  );
}

export function RecentTable(props: { snapshot: ClusterSnapshot }) {
  const rows = props.snapshot.instances
    .flatMap((i) => (i.up ? i.lifecycle.recent.filter((e) => RECENT.has(e.event)).map((e) => ({ ...e, task: i.id, placement: i.placement })) : []))
    .sort((a, b) => b.at - a.at)
    .slice(0, 10);
  return (
    <section class="recent" data-part="recent">
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
                <td>
                  <Ago at={r.at} now={props.snapshot.at} />
                </td>
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

/**
 * The page. With `live`, its script (live.tsx) takes the page's parts from `GET /tasks/watch` and
 * replaces them in place; without JavaScript, it refreshes itself every REFRESH_SECONDS.
 */
export function StatusPage(props: { snapshot: ClusterSnapshot; application: string; signedIn: boolean; live?: { nonce: string; text: string } }) {
  const { snapshot } = props;
  const time = new Date(snapshot.at).toISOString().slice(11, 19);
  return (
    <Page title="Edge Streams — status" refresh script={props.live}>
      <header class="top">
        <h1>Edge Streams</h1>
        <span class="meta">
          application <b>{props.application}</b> · {fmt(snapshot.summary.instances)} task instances ·{" "}
          <span data-live>
            updated {time} UTC{props.live ? "" : ` · refreshes every ${REFRESH_SECONDS} s`}
          </span>
        </span>
        {props.signedIn ? (
          <form method="post" action="/logout">
            <button type="submit">Sign out</button>
          </form>
        ) : null}
      </header>
      <main>
        <Shutdown snapshot={snapshot} />
        <SummarySection snapshot={snapshot} />
        <Pages snapshot={snapshot} />
        <Placements snapshot={snapshot} />
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
