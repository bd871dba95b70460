/**
 * The cluster view as `GET /tasks/watch` sends it (docs/http-api.md), in parts that
 * src/subscriptions/view-watch.ts diffs from one read to the next:
 *
 * - `json` (the API): `task:<id>@<placement>` per instance of the page (as `GET /tasks` describes
 *   it; an instance not answering is `{"up": false, …}`), `summary`, `shutdown`, `next`;
 * - `html` (the status page): the page's pieces as components.tsx renders them, named by their
 *   `data-part`: `shutdown`, `summary`, `pages`, `recent`, a `card:<instance>` per instance and a
 *   `note:<placement>` per placement, and `placements` (the whole grid), which counts as changed
 *   only when the cards or columns it holds are others or in another order — then it is sent
 *   instead of its cards. Times shown as "… ago" do not count as changes: the page's script keeps
 *   them current itself.
 *
 * PAGE_SCRIPT is the page's side: it opens an EventSource on the html view and replaces each part
 * it gets in place (no navigation).
 */
import type { JSX } from "hono/jsx/jsx-runtime";
import type { ViewDiff, ViewParts, ViewWatch } from "../../../src/subscriptions/view-watch";
import { instanceName as durableName } from "../../../src/names";
import { summaryJson } from "../views";
import { InstanceCard, Pages, PlacementNote, placementInstances, Placements, RecentTable, Shutdown, SummarySection } from "./components";
import type { ClusterSnapshot, InstanceView } from "./snapshot";

export type ViewFormat = "json" | "html";

const text = (node: JSX.Element): string => String(node);

/** An instance as `GET /tasks` describes it: the description without the page's counters and history. */
function described(instance: InstanceView): unknown {
  if (!instance.up) return instance;
  const { counters: _counters, lifecycle: _lifecycle, up: _up, ...description } = instance;
  return description;
}

const instanceName = (i: InstanceView) => durableName({ taskId: i.id, placement: i.placement });

/** The parts of a view in the API's form. */
export function jsonParts(snapshot: ClusterSnapshot): ViewParts {
  const parts = new Map<string, string>();
  for (const instance of snapshot.instances) parts.set(`task:${instanceName(instance)}`, JSON.stringify(described(instance)));
  parts.set("summary", JSON.stringify(summaryJson({ summary: snapshot.summary, placements: snapshot.placements }, snapshot.at)));
  parts.set("shutdown", JSON.stringify(snapshot.shutdown));
  parts.set("next", JSON.stringify(snapshot.next));
  return parts;
}

/** The parts of a view in the page's form. */
export function htmlParts(snapshot: ClusterSnapshot): ViewParts {
  const parts = new Map<string, string>([
    ["shutdown", text(<Shutdown snapshot={snapshot} />)],
    ["summary", text(<SummarySection snapshot={snapshot} />)],
    ["pages", text(<Pages snapshot={snapshot} />)],
    ["placements", text(<Placements snapshot={snapshot} />)],
    ["recent", text(<RecentTable snapshot={snapshot} />)],
  ]);
  for (const placement of snapshot.placements) {
    const instances = placementInstances(snapshot, placement.name);
    parts.set(`note:${placement.name}`, text(<PlacementNote placement={placement} onPage={instances.length} />));
    for (const instance of instances) parts.set(`card:${instanceName(instance)}`, text(<InstanceCard instance={instance} now={snapshot.at} />));
  }
  return parts;
}

/** `<time data-at>`'s words, which the page keeps current itself. */
const TIME_WORDS = /(<time data-at="[0-9]+">)[^<]*(<\/time>)/g;
/** The parts a piece of the page holds, in order: what the grid is made of. */
const PART_NAMES = /data-part="([^"]*)"/g;

const withoutTimes = (html: string) => html.replace(TIME_WORDS, "$1$2");
const layout = (html: string) => [...html.matchAll(PART_NAMES)].map((m) => m[1]).join("\n");

/** Parts of the page compare without their times; the grid by what it holds. */
function samePagePart(name: string, a: string, b: string): boolean {
  if (name === "placements") return layout(a) === layout(b);
  return a === b || withoutTimes(a) === withoutTimes(b);
}

/** The data of a page event: the parts to replace, by name. A new grid carries its cards and notes. */
function pageEvent(view: ViewParts, names: Iterable<string>, at: number): string {
  const names_ = [...names];
  const grid = names_.includes("placements");
  const parts: Record<string, string> = {};
  for (const name of names_) if (!(grid && (name.startsWith("card:") || name.startsWith("note:")))) parts[name] = view.get(name)!;
  return JSON.stringify({ at, parts });
}

/** The calls a read of the view made: one per instance of the page, one to the coordinator, one per restore worker shard. */
export function callsOf(snapshot: ClusterSnapshot): number {
  return snapshot.instances.length + 1 + snapshot.placements.reduce((n, p) => n + p.shards, 0);
}

/** The watch of `GET /tasks/watch` in `format`, reading the view with `read`. */
export function viewWatch(format: ViewFormat, read: () => Promise<ClusterSnapshot>): ViewWatch {
  const parts = (render: (snapshot: ClusterSnapshot) => ViewParts) => async () => {
    const snapshot = await read();
    return { parts: render(snapshot), calls: callsOf(snapshot) };
  };
  if (format === "html") {
    return {
      read: parts(htmlParts),
      whole: (view, at) => pageEvent(view, ["shutdown", "summary", "pages", "placements", "recent"], at),
      change: (view, diff: ViewDiff, at) => pageEvent(view, diff.changed, at),
      same: samePagePart,
    };
  }
  const tasks = (view: ViewParts, names: Iterable<string>) => `[${[...names].map((n) => view.get(n)!).join(",")}]`;
  const taskNames = (names: Iterable<string>) => [...names].filter((n) => n.startsWith("task:"));
  const field = (view: ViewParts, changed: readonly string[], name: string) => (changed.includes(name) ? `,"${name}":${view.get(name)}` : "");
  return {
    read: parts(jsonParts),
    whole: (view, at) =>
      `{"at":${at},"tasks":${tasks(view, taskNames(view.keys()))},"summary":${view.get("summary")},"shutdown":${view.get("shutdown")},"next":${view.get("next")}}`,
    change: (view, diff, at) => {
      const removed = JSON.stringify(taskNames(diff.removed).map((n) => n.slice("task:".length)));
      const changed = diff.changed;
      return `{"at":${at},"tasks":${tasks(view, taskNames(changed))},"removed":${removed}${field(view, changed, "summary")}${field(view, changed, "shutdown")}${field(view, changed, "next")}}`;
    },
  };
}

/**
 * The page's script: follows `GET /tasks/watch?format=html` (the page's cursor kept) and puts each
 * part it gets in place of the element with that `data-part`. The browser's EventSource reconnects
 * by itself when a stream drops; the first event of each connection is the whole view. A stream
 * refused (its readyState CLOSED: a 401 once the session lapsed, a 503) is opened again after a
 * back-off, and after 4 refusals in a row the page reloads (a lapsed session then goes to `/login`).
 * Times shown as "… ago" are kept current every second.
 */
export const PAGE_SCRIPT = `(() => {
  const url = new URL("/tasks/watch", location.href);
  url.searchParams.set("format", "html");
  const cursor = new URLSearchParams(location.search).get("cursor");
  if (cursor) url.searchParams.set("cursor", cursor);
  const status = document.querySelector("[data-live]");
  const words = (ms) => {
    const s = Math.max(0, Math.round(ms / 1000));
    return (s < 90 ? s + " s" : s < 5400 ? Math.round(s / 60) + " min" : Math.round(s / 3600) + " h") + " ago";
  };
  const tick = () => {
    for (const t of document.querySelectorAll("time[data-at]")) t.textContent = words(Date.now() - Number(t.dataset.at));
  };
  const apply = (event) => {
    const { at, parts } = JSON.parse(event.data);
    for (const [name, html] of Object.entries(parts)) {
      const element = document.querySelector('[data-part="' + CSS.escape(name) + '"]');
      if (element) element.outerHTML = html;
    }
    status.textContent = "live · updated " + new Date(at).toISOString().slice(11, 19) + " UTC";
    tick();
  };
  let refused = 0;
  const connect = () => {
    const source = new EventSource(url);
    source.addEventListener("view", (event) => {
      refused = 0;
      apply(event);
    });
    source.addEventListener("change", apply);
    source.addEventListener("error", () => {
      status.textContent = "reconnecting…";
      if (source.readyState !== EventSource.CLOSED) return;
      if (++refused > 4) location.reload();
      else setTimeout(connect, 1000 * 2 ** refused);
    });
  };
  connect();
  setInterval(tick, 1000);
})();`;
