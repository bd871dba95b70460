/**
 * `GET /`: the status page for people — the application summary (instances by state, lag, restore
 * progress), placements as columns with their restore workers, and a page of task instances
 * (`?cursor=` pages on) with role, state, epoch, incarnation, lag and restore or standby progress,
 * recent corruptions and migrations. Server-rendered, refreshing itself every 2 s, readable without
 * JavaScript; a refresh costs a bounded number of calls whatever the number of tasks.
 * `GET /login` / `POST /login` sign a browser in with the API token once (see status/session.ts);
 * `POST /logout` signs it out.
 */
import { zValidator } from "@hono/zod-validator";
import type { Context } from "hono";
import { Hono } from "hono";
import { getCookie } from "hono/cookie";
import { html } from "hono/html";
import type { JSX } from "hono/jsx/jsx-runtime";
import { timingSafeEqual } from "hono/utils/buffer";
import { z } from "zod";
import { requiredToken } from "../auth";
import type { ApiEnv } from "../context";
import { LoginPage, StatusPage } from "../status/components";
import { endSession, SESSION_COOKIE, startSession } from "../status/session";
import { clusterSnapshot } from "../status/snapshot";
import { invalidInput } from "../validation";
import { pageQuery } from "../views";

/** Pages say what they are and load nothing from anywhere: no scripts, no framing. */
function pageHeaders(c: Context): void {
  c.header("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'");
  c.header("X-Content-Type-Options", "nosniff");
  c.header("Referrer-Policy", "no-referrer");
  c.header("Cache-Control", "no-store");
}

function render(c: Context, page: JSX.Element, status: 200 | 400 | 401 = 200) {
  pageHeaders(c);
  return c.html(html`<!DOCTYPE html>${page}`, status);
}

const loginForm = z.object({ token: z.string().trim().min(1, "enter the API token").max(4096, "that is not a token") });

export const statusPage = new Hono<ApiEnv>();

/** Instances per page of the status page (`?cursor=` pages on): its refresh costs at most this many calls, plus one per restore worker shard and one to the coordinator. */
export const STATUS_PAGE_INSTANCES = 100;

statusPage.get("/", zValidator("query", pageQuery(STATUS_PAGE_INSTANCES, STATUS_PAGE_INSTANCES), invalidInput), async (c) => {
  const { limit, after } = c.req.valid("query");
  const snapshot = await clusterSnapshot(c.var.host, { after, limit });
  const signedIn = getCookie(c, SESSION_COOKIE, "host") !== undefined;
  return render(c, <StatusPage snapshot={snapshot} application={c.var.host.application.applicationId} signedIn={signedIn} />);
});

statusPage.get("/login", (c) => render(c, <LoginPage />));

statusPage.post(
  "/login",
  zValidator("form", loginForm, (result, c) => {
    if (!result.success) return render(c, <LoginPage error={result.error.issues[0]?.message ?? "invalid form"} />, 400);
  }),
  async (c) => {
    const config = c.get("config");
    const expected = requiredToken(config.API_TOKEN, config.localDevelopment, c.req.url);
    if (expected === null) return c.redirect("/", 303);
    if (!(await timingSafeEqual(c.req.valid("form").token, expected))) return render(c, <LoginPage error="That token is not right." />, 401);
    await startSession(c, expected);
    return c.redirect("/", 303);
  },
);

statusPage.post("/logout", (c) => {
  endSession(c);
  return c.redirect("/login", 303);
});
