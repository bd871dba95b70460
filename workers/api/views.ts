/**
 * What the views (`GET /tasks`, `/metrics`, the status page) read, in a number of calls bounded by
 * the configuration, never by the number of tasks: a page of the assignment from the coordinator
 * (one call), and the application summary from the restore worker shards (one call per shard of
 * each configured placement: src/summary/summary.ts). Only the instances of the page are asked
 * for details, by the route.
 */
import { z } from "zod";
import type { Host } from "../../platform/host";
import type { AssignmentPage } from "../../durable-objects/calls";
import { instanceName, parseInstanceName } from "../../src/names";
import { EMPTY_SUMMARY, mergeSummaries, type Summary } from "../../src/summary/summary";
import { ageMs } from "../../src/task/input-lag";
import { coordinator } from "./cluster";
import { decodeCursor, encodeCursor } from "./cursor";

/** Instances per page of `GET /tasks` and `/metrics` by default, and at most. */
export const DEFAULT_PAGE = 500;
export const MAX_PAGE = 500;

/** The `limit` of a paged view's query: 1…max. */
export function limitParam(max: number) {
  return z
    .string()
    .regex(/^[0-9]{1,9}$/, "limit is a positive integer")
    .transform(Number)
    .pipe(z.number().int().min(1, "limit is at least 1").max(max, `limit is at most ${max}`))
    .optional();
}

/** The query of a paged view: `limit` (1…max, default `fallback`) and `cursor` (an instance name this route returned). */
export function pageQuery(fallback: number, max: number) {
  return z
    .object({
      limit: limitParam(max),
      cursor: z
        .string()
        .max(1_024, "cursor is too long")
        .transform((cursor, ctx) => {
          const name = decodeCursor(cursor);
          const instance = name === undefined ? undefined : parseInstanceName(name);
          if (!instance) {
            ctx.addIssue({ code: "custom", message: "cursor is not one this route returned" });
            return z.NEVER;
          }
          return instance;
        })
        .optional(),
    })
    .transform((q) => ({ limit: q.limit ?? fallback, after: q.cursor }));
}

/** The cursor of the page after `page` (null on the last page). */
export function nextCursor(page: AssignmentPage): string | null {
  const last = page.instances[page.instances.length - 1];
  return page.more && last ? encodeCursor(instanceName(last)) : null;
}

/** A page of the assignment, made first if it is not yet (the coordinator's `page`). */
export async function assignmentPage(host: Host, after: { taskId: string; placement: string } | undefined, limit: number): Promise<AssignmentPage> {
  return coordinator(host).page(after, limit);
}

/** A placement as the views show it. */
export interface PlacementView {
  readonly name: string;
  /** False for a placement no longer configured that still holds instances. */
  readonly configured: boolean;
  /** Restoration paused by `POST /admin/restore/pause` at every shard (null when no shard answered). */
  readonly restorePaused: boolean | null;
  /** Batches still allowed while paused (`resume` with `maxBatches`), summed over the shards. */
  readonly restoreBudget: number | null;
  /** Restore worker shards of the placement, and how many answered. */
  readonly shards: number;
  readonly shardsAnswering: number;
  /** The placement's part of the summary. */
  readonly summary: Summary;
}

/** The application summary (`summary` of `GET /tasks`) and the placements, from the shards. */
export interface ApplicationView {
  readonly summary: Summary & { readonly instances: number };
  readonly placements: PlacementView[];
}

/**
 * Asks every restore worker shard of every configured placement for its part of the summary and
 * its restore control (placements × shards calls). A shard that does not answer is left out (its
 * instances count as not reported). `instances` is the assignment's total, from the page read.
 */
export async function applicationView(host: Host, instances: number, placementsSeen: readonly string[] = []): Promise<ApplicationView> {
  const shards = host.restoreShards;
  const configured = host.config.PLACEMENTS;
  const placements = await Promise.all(
    configured.map(async (name): Promise<PlacementView> => {
      const answers = await Promise.allSettled(host.restoreWorkers(name).map((worker, shard) => worker.summary(shard, shards)));
      const answered = answers.flatMap((a) => (a.status === "fulfilled" ? [a.value] : []));
      const budgets = answered.filter((a) => a.paused && a.budget !== null).map((a) => a.budget!);
      return {
        name,
        configured: true,
        restorePaused: answered.length === 0 ? null : answered.every((a) => a.paused),
        restoreBudget: budgets.length > 0 ? budgets.reduce((n, b) => n + b, 0) : null,
        shards,
        shardsAnswering: answered.length,
        summary: mergeSummaries(answered),
      };
    }),
  );
  const extra = [...new Set(placementsSeen)].filter((p) => !configured.includes(p));
  for (const name of extra)
    placements.push({ name, configured: false, restorePaused: null, restoreBudget: null, shards: 0, shardsAnswering: 0, summary: EMPTY_SUMMARY });
  return { summary: { ...mergeSummaries(placements.map((p) => p.summary)), instances }, placements };
}

/** The summary as `GET /tasks` answers it (docs/http-api.md). */
export function summaryJson(view: ApplicationView, now = Date.now()) {
  const { summary, placements } = view;
  return {
    instances: summary.instances,
    byState: summary.byState,
    lag: summary.lag,
    standbyLag: summary.standbyLag,
    maxLagMs: ageMs(summary.oldestWaiting, now),
    restoring: summary.restoring,
    byRole: summary.byRole,
    failed: summary.failed,
    reported: summary.reported,
    shards: { answering: placements.reduce((n, p) => n + p.shardsAnswering, 0), total: placements.reduce((n, p) => n + p.shards, 0) },
  };
}
