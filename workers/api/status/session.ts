/**
 * Browser sign-in for the status page. `POST /login` takes a token that may read once and sets a
 * session cookie `__Host-edge_session` (`Secure; HttpOnly; SameSite=Strict; Path=/`) whose value is
 * `v2.<expiry>.<HMAC-SHA256(key = the session key, "edge-streams session v2|<expiry>|<token>")>`:
 *
 * - never the token, nor a plain hash of it (a stolen cookie reveals nothing about the token, and
 *   cannot be brute-forced offline to recover it);
 * - it expires (12 h); removing the token it was opened with ends it (rotation), and so does
 *   replacing the session key (`POST /admin/sessions/revoke`): the key is the coordinator's,
 *   durable, and each isolate keeps it for SESSION_KEY_TTL_MS at most, so a revocation holds
 *   everywhere within that time (at once in the isolate that made it);
 * - it needs no session store: any isolate checks it against the key and the tokens.
 *
 * The cookie grants the read role, for safe GET routes only (access.ts `cookie`); everything
 * that changes state needs a token, which a browser never attaches by itself.
 */
import type { Context } from "hono";
import { deleteCookie, setCookie } from "hono/cookie";
import { encodeBase64Url } from "hono/utils/encode";
import type { Host } from "../../../platform/host";
import { secretMatches } from "../auth";

export const SESSION_COOKIE = "edge_session";
export const SESSION_SECONDS = 12 * 60 * 60;
/** How long an isolate uses the session key it read before it reads it again. */
export const SESSION_KEY_TTL_MS = 10_000;

const encoder = new TextEncoder();

async function mac(key: string, token: string, expires: number): Promise<string> {
  const hmac = await crypto.subtle.importKey("raw", encoder.encode(key), { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  // base64url without padding: the cookie's form since v2.
  return encodeBase64Url(await crypto.subtle.sign("HMAC", hmac, encoder.encode(`edge-streams session v2|${expires}|${token}`))).replace(/=+$/, "");
}

/** A session value for `token`, valid until `now + SESSION_SECONDS`. */
export async function sessionValue(key: string, token: string, now = Date.now()): Promise<string> {
  const expires = Math.floor(now / 1000) + SESSION_SECONDS;
  return `v2.${expires}.${await mac(key, token, expires)}`;
}

/** Whether `value` is a live session signed with `key` for one of `tokens` (every one is tried). */
export async function sessionValid(value: string | undefined, key: string, tokens: readonly string[], now = Date.now()): Promise<boolean> {
  const match = /^v2\.([0-9]{1,12})\.([A-Za-z0-9_-]{43})$/.exec(value ?? "");
  if (!match) return false;
  const expires = Number(match[1]);
  const seconds = now / 1000;
  if (expires <= seconds || expires > seconds + SESSION_SECONDS) return false;
  let valid = false;
  for (const token of tokens) if (secretMatches(match[2]!, await mac(key, token, expires))) valid = true;
  return valid;
}

export async function startSession(c: Context, key: string, token: string): Promise<void> {
  setCookie(c, SESSION_COOKIE, await sessionValue(key, token), {
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

const keys = new WeakMap<Host, { readonly key: string; readonly at: number }>();

/** The session key, as this isolate last read it from the coordinator (again after SESSION_KEY_TTL_MS). */
export async function sessionKey(host: Host, now = Date.now()): Promise<string> {
  const known = keys.get(host);
  if (known && now - known.at < SESSION_KEY_TTL_MS) return known.key;
  const key = await host.coordinator().sessionKey();
  keys.set(host, { key, at: now });
  return key;
}

/** Ends every session: a new session key, used by this isolate at once. */
export async function revokeSessions(host: Host, now = Date.now()): Promise<void> {
  const key = await host.coordinator().rotateSessionKey();
  keys.set(host, { key, at: now });
}
