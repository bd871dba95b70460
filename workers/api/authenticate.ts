/**
 * Authentication and authorization of every request, before any route: the route's entry in the
 * access table (access.ts) says which roles may call it and how callers prove who they are; the
 * credential presented is checked against the configured tokens (credentials.ts). Then:
 *
 * - 401 without a credential, or with one that matches no token (counted: a client past the
 *   limit is refused with 429 for a while, auth-failures.ts);
 * - 403 when a credential a browser attaches by itself (the session cookie, HTTP Basic) comes
 *   from a page of another origin (origin.ts), or when its roles do not include one the route needs.
 *
 * A browser asking for the status page without credentials is sent to `/login`. The roles found
 * are on the context (`c.var.access`) for the routes' own checks (owned.ts).
 */
import type { Context, MiddlewareHandler } from "hono";
import { getCookie } from "hono/cookie";
import { accessRule, type AccessRule } from "./access";
import { basicPassword, bearerToken } from "./auth";
import { authFailures, clientOf } from "./auth-failures";
import type { Access, ApiEnv } from "./context";
import { credentialsOf, OPEN_ROLES, rolesOf, type Role } from "./credentials";
import { ApiError } from "./http-error";
import { fromAnotherOrigin } from "./origin";
import { SESSION_COOKIE, sessionKey, sessionValid } from "./status/session";
import { isWatchPath, subprotocolToken } from "./watch-auth";
import { logEvent } from "../../src/util/logging";

/** What a session cookie grants: reading, on the routes that take it. */
const SESSION_ROLES: ReadonlySet<Role> = new Set<Role>(["read"]);

export function tooManyFailures(seconds: number): ApiError {
  return new ApiError(429, "too_many_requests", `too many failed authentications from this client: try again in ${seconds} s`, seconds);
}

function unauthorized(c: Context<ApiEnv>, rule: AccessRule): ApiError {
  // No challenge for HTTP Basic: a browser answers `WWW-Authenticate: Basic` with a prompt and
  // then attaches what was typed to every later request, from any site. The dialect's clients send
  // their credentials unasked.
  if (rule.scheme === "bearer") c.header("WWW-Authenticate", 'Bearer realm="edge-streams"');
  const how = rule.scheme === "basic" ? "HTTP Basic, user edge, password a token" : "Authorization: Bearer <token>";
  return new ApiError(401, "unauthorized", `unauthorized: missing or invalid credentials (${how})`);
}

/** The tokens a session may have been opened with: those that may read. */
export function readTokens(c: Context<ApiEnv>): string[] {
  return credentialsOf(c.get("config"), c.req.url)
    .tokens.filter((t) => t.roles.has("read"))
    .map((t) => t.token);
}

/** Whether the request carries a live session cookie (false too when the session key cannot be read now). */
async function hasSession(c: Context<ApiEnv>): Promise<boolean> {
  const value = getCookie(c, SESSION_COOKIE, "host");
  if (value === undefined) return false;
  try {
    return await sessionValid(value, await sessionKey(c.var.host), readTokens(c));
  } catch (error) {
    logEvent("http.session_key_unavailable", { error: String(error) }, "warn");
    return false;
  }
}

/** Who the request is, or the error that answers it (a redirect for a browser without a session). */
async function identify(c: Context<ApiEnv>, rule: AccessRule): Promise<Access | Response> {
  const credentials = credentialsOf(c.get("config"), c.req.url);
  const header = c.req.header("Authorization");
  // A browser's WebSocket cannot send Authorization: its token comes as a subprotocol (watch-auth.ts).
  const presented = rule.scheme === "basic" ? basicPassword(header) : (bearerToken(header) ?? subprotocolToken(c.req.raw));
  if (credentials.open) return { roles: OPEN_ROLES, via: "open" };
  if (presented !== null) {
    const client = clientOf(c.req.raw);
    const blocked = authFailures.blockedFor(client);
    if (blocked > 0) throw tooManyFailures(blocked);
    const roles = rolesOf(credentials, presented);
    if (roles !== null) return { roles, via: rule.scheme };
    const seconds = await authFailures.fail(client, c.env.AUTH_RATE_LIMITER);
    throw seconds > 0 ? tooManyFailures(seconds) : unauthorized(c, rule);
  }
  const safe = c.req.method === "GET" || c.req.method === "HEAD";
  // Subscriptions take the session too: EventSource and WebSocket cannot send Authorization.
  const cookie = rule.cookie === true || isWatchPath(c.req.path);
  if (cookie && safe && (await hasSession(c))) return { roles: SESSION_ROLES, via: "cookie" };
  if (c.req.path === "/" && safe && header === undefined) return c.redirect("/login", 303);
  throw unauthorized(c, rule);
}

export const authenticate: MiddlewareHandler<ApiEnv> = async (c, next) => {
  const rule = accessRule(c.req.path);
  // The sign-in pages check their own requests (routes/status-page.tsx).
  if (rule.public) return next();
  const access = await identify(c, rule);
  if (access instanceof Response) return access;
  if (access.via !== "bearer" && fromAnotherOrigin(c.req.raw)) {
    throw new ApiError(
      403,
      "forbidden",
      "refused: a request from a page of another origin (a browser's cookie or HTTP Basic credentials are never taken from one)",
    );
  }
  if (!rule.roles.some((role) => access.roles.has(role))) {
    const has = [...access.roles].join(", ") || "none";
    throw new ApiError(
      403,
      "forbidden",
      `this credential may not ${c.req.method} ${c.req.path}: that needs the ${rule.roles.join(" or ")} role (it has ${has})`,
    );
  }
  c.set("access", access);
  await next();
};
