/**
 * `GET /`: the status page for people — the application summary (instances by state, lag, restore
 * progress), placements as columns with their restore workers, and a page of task instances
 * (`?cursor=` pages on) with role, state, epoch, incarnation, lag and restore or standby progress,
 * recent corruptions and migrations. Server-rendered, then live: its script follows
 * `GET /tasks/watch?format=html` and replaces the parts that change in place (../status/live.tsx);
 * without JavaScript it refreshes itself every 2 s. A read of the view costs a bounded number of
 * calls whatever the number of tasks.
 * `GET /login` / `POST /login` sign a browser in with a token that may read, once (see
 * status/session.ts); `POST /logout` signs it out.
 */
import { zValidator } from "@hono/zod-validator";
import type { Context, MiddlewareHandler } from "hono";
import { Hono } from "hono";
import { getCookie } from "hono/cookie";
import { html } from "hono/html";
import { encodeBase64Url } from "hono/utils/encode";
import type { JSX } from "hono/jsx/jsx-runtime";
import { z } from "zod";
import { authFailures, clientOf } from "../auth-failures";
import { credentialsOf, grants, rolesOf } from "../credentials";
import { fromAnotherOrigin } from "../origin";
import type { ApiEnv } from "../context";
import { LoginPage, StatusPage } from "../status/components";
import { PAGE_SCRIPT } from "../status/live";
import { endSession, SESSION_COOKIE, sessionKey, startSession } from "../status/session";
import { clusterSnapshot } from "../status/snapshot";
import { invalidInput } from "../validation";
import { pageQuery } from "../views";
import { WATCH_PAGE } from "./tasks";

/**
 * Pages say what they are and load nothing from anywhere, no framing: the one script is the status
 * page's own, inline, allowed by a nonce of this response; it connects to this origin only.
 */
function pageHeaders(c: Context, nonce?: string): void {
  const script = nonce === undefined ? "" : `; script-src 'nonce-${nonce}'; connect-src 'self'`;
  c.header("Content-Security-Policy", `default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'${script}`);
  c.header("X-Content-Type-Options", "nosniff");
  c.header("Referrer-Policy", "no-referrer");
  c.header("Cache-Control", "no-store");
}

function render(c: Context, page: JSX.Element, status: 200 | 400 | 401 | 403 | 429 = 200, nonce?: string) {
  pageHeaders(c, nonce);
  return c.html(html`<!DOCTYPE html>${page}`, status);
}

const loginForm = z.object({ token: z.string().trim().min(1, "enter the API token").max(4096, "that is not a token") });

export const statusPage = new Hono<ApiEnv>();

/** Instances per page of the status page (`?cursor=` pages on): a read of its view costs at most this many calls, plus one per restore worker shard and one to the coordinator. */
export const STATUS_PAGE_INSTANCES = WATCH_PAGE;

statusPage.get("/", zValidator("query", pageQuery(STATUS_PAGE_INSTANCES, STATUS_PAGE_INSTANCES), invalidInput), async (c) => {
  const { limit, after } = c.req.valid("query");
  const snapshot = await clusterSnapshot(c.var.host, { after, limit });
  const signedIn = getCookie(c, SESSION_COOKIE, "host") !== undefined;
  const nonce = encodeBase64Url(crypto.getRandomValues(new Uint8Array(16)).buffer).replace(/=+$/, "");
  const live = { nonce, text: PAGE_SCRIPT };
  return render(c, <StatusPage snapshot={snapshot} application={c.var.host.application.applicationId} signedIn={signedIn} live={live} />, 200, nonce);
});

statusPage.get("/login", (c) => render(c, <LoginPage />));

/**
 * The sign-in form and sign-out take a form, which any page can post here: they refuse a request
 * from a page of another origin (a forged sign-in would sign a browser in to someone else's
 * session, a forged sign-out end one), as the session cookie's routes do (../origin.ts).
 */
const sameOrigin: MiddlewareHandler<ApiEnv> = async (c, next) => {
  if (fromAnotherOrigin(c.req.raw)) return render(c, <LoginPage error="Refused: that form was sent from another site." />, 403);
  await next();
};

statusPage.post(
  "/login",
  sameOrigin,
  zValidator("form", loginForm, (result, c) => {
    if (!result.success) return render(c, <LoginPage error={result.error.issues[0]?.message ?? "invalid form"} />, 400);
  }),
  async (c) => {
    const credentials = credentialsOf(c.get("config"), c.req.url);
    if (credentials.open) return c.redirect("/", 303);
    const client = clientOf(c.req.raw);
    const tooMany = (seconds: number) => {
      c.header("Retry-After", String(seconds));
      return render(c, <LoginPage error={`Too many failed attempts: try again in ${seconds} s.`} />, 429);
    };
    const blocked = authFailures.blockedFor(client);
    if (blocked > 0) return tooMany(blocked);
    const { token } = c.req.valid("form");
    const roles = rolesOf(credentials, token);
    if (roles === null) {
      const seconds = await authFailures.fail(client, c.env.AUTH_RATE_LIMITER);
      return seconds > 0 ? tooMany(seconds) : render(c, <LoginPage error="That token is not right." />, 401);
    }
    if (!grants(roles, "read")) return render(c, <LoginPage error="That token may not read the status page." />, 403);
    await startSession(c, await sessionKey(c.var.host), token);
    return c.redirect("/", 303);
  },
);

statusPage.post("/logout", sameOrigin, (c) => {
  endSession(c);
  return c.redirect("/login", 303);
});
