/**
 * Browser sign-in for the status page. `POST /login` takes the API token once and sets a session
 * cookie `__Host-edge_session` (`Secure; HttpOnly; SameSite=Strict; Path=/`) whose value is
 * `v1.<expiry>.<HMAC-SHA256(key = API token, "edge-streams session v1|<expiry>")>`:
 *
 * - never the token, nor a plain hash of it (a stolen cookie reveals nothing about the token, and
 *   cannot be brute-forced offline to recover it);
 * - it expires (12 h), and rotating `API_TOKEN` invalidates every session at once;
 * - it needs no session store: any isolate checks it in constant time.
 *
 * The cookie is accepted only for safe, read-only GET routes (`COOKIE_ROUTES`); everything that
 * changes state still needs the bearer token, so a browser cannot be made to change anything.
 */
import type { Context } from "hono";
import { deleteCookie, getCookie, setCookie } from "hono/cookie";
import { timingSafeEqual } from "hono/utils/buffer";

export const SESSION_COOKIE = "edge_session";
export const SESSION_SECONDS = 12 * 60 * 60;
/** GET routes a session cookie may read; all other routes want the bearer token. */
export const COOKIE_ROUTES: readonly string[] = ["/", "/tasks", "/metrics"];
/** Routes that answer without any credential (the sign-in pages). */
export const PUBLIC_PAGES: readonly string[] = ["/login", "/logout"];

const encoder = new TextEncoder();

function base64url(bytes: ArrayBuffer): string {
  let binary = "";
  for (const byte of new Uint8Array(bytes)) binary += String.fromCharCode(byte);
  return btoa(binary).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

async function mac(token: string, expires: number): Promise<string> {
  const key = await crypto.subtle.importKey("raw", encoder.encode(token), { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  return base64url(await crypto.subtle.sign("HMAC", key, encoder.encode(`edge-streams session v1|${expires}`)));
}

/** A session value valid until `now + SESSION_SECONDS`. */
export async function sessionValue(token: string, now = Date.now()): Promise<string> {
  const expires = Math.floor(now / 1000) + SESSION_SECONDS;
  return `v1.${expires}.${await mac(token, expires)}`;
}

export async function sessionValid(value: string | undefined, token: string, now = Date.now()): Promise<boolean> {
  const match = /^v1\.([0-9]{1,12})\.([A-Za-z0-9_-]{43})$/.exec(value ?? "");
  if (!match) return false;
  const expires = Number(match[1]);
  const seconds = now / 1000;
  if (expires <= seconds || expires > seconds + SESSION_SECONDS) return false;
  return timingSafeEqual(match[2]!, await mac(token, expires));
}

export async function startSession(c: Context, token: string): Promise<void> {
  setCookie(c, SESSION_COOKIE, await sessionValue(token), {
    prefix: "host",
    secure: true,
    httpOnly: true,
    sameSite: "Strict",
    path: "/",
    maxAge: SESSION_SECONDS,
  });
}

export function endSession(c: Context): void {
  deleteCookie(c, SESSION_COOKIE, { prefix: "host", secure: true, httpOnly: true, sameSite: "Strict", path: "/" });
}

/**
 * How a request without a valid bearer token fares: `allow` (a GET of a cookie route with a valid
 * session), `login` (a browser asking for the status page without credentials: send it to sign
 * in) or `deny`.
 */
export async function sessionDecision(c: Context, token: string): Promise<"allow" | "login" | "deny"> {
  const safe = c.req.method === "GET" || c.req.method === "HEAD";
  if (!safe || !COOKIE_ROUTES.includes(c.req.path)) return "deny";
  if (await sessionValid(getCookie(c, SESSION_COOKIE, "host"), token)) return "allow";
  return c.req.path === "/" && c.req.header("Authorization") === undefined ? "login" : "deny";
}
