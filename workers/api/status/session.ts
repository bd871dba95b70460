/**
 * Browser sign-in for the status page. `POST /login` takes a token that may read and sets a
 * session cookie `__Host-edge_session` (`Secure; HttpOnly; SameSite=Strict; Path=/`), signed with
 * hono's signed cookies (`hono/cookie`): its value is `v3.<expiry>`, then `.` and the base64
 * HMAC-SHA256 of it, whose key is made of the session key and the token the session was opened with:
 *
 * - never the token, nor a plain hash of it (a stolen cookie reveals nothing about the token, and
 *   cannot be brute-forced offline to recover it);
 * - it expires (12 h); removing the token it was opened with ends it (rotation), and so does
 *   replacing the session key (`POST /admin/sessions/revoke`): the key is the coordinator's,
 *   durable, and each isolate keeps it for SESSION_KEY_TTL_MS at most, so a revocation holds
 *   everywhere within that time (at once in the isolate that made it);
 * - it needs no session store: any isolate checks it against the key and the tokens (hono checks
 *   the signature with `crypto.subtle.verify`, in constant time).
 *
 * The cookie grants the read role, for safe GET routes only (access.ts `cookie`); everything
 * that changes state needs a token, which a browser never attaches by itself.
 */
import type { Context } from "hono";
import { deleteCookie, setSignedCookie } from "hono/cookie";
import { parseSigned, serializeSigned } from "hono/utils/cookie";
import type { Host } from "../../../platform/host";

export const SESSION_COOKIE = "edge_session";
export const SESSION_SECONDS = 12 * 60 * 60;
/** How long an isolate uses the session key it read before it reads it again. */
export const SESSION_KEY_TTL_MS = 10_000;

/** The cookie's form (v2 was a MAC written by hand; its sessions end once). `live` reads it. */
const VERSION = "v3";
const OPTIONS = { prefix: "host", secure: true, httpOnly: true, sameSite: "Strict", path: "/" } as const;

/** The signing secret of a session opened with `token` under the session key `key`. */
function secretOf(key: string, token: string): string {
  return `edge-streams session ${VERSION}|${key}|${token}`;
}

/** What a session opened at `now` signs: its version and expiry (unix seconds). */
function signedPart(now: number): string {
  return `${VERSION}.${Math.floor(now / 1000) + SESSION_SECONDS}`;
}

/** A session value for `token`, valid until `now + SESSION_SECONDS` (the cookie's value as `Set-Cookie` sends it). */
export async function sessionValue(key: string, token: string, now = Date.now()): Promise<string> {
  const serialized = await serializeSigned(SESSION_COOKIE, signedPart(now), secretOf(key, token));
  return serialized.slice(SESSION_COOKIE.length + 1);
}

/** Whether `value` (as sent or as read by `getCookie`) is a live session signed with `key` for one of `tokens` (every one is tried). */
export async function sessionValid(value: string | undefined, key: string, tokens: readonly string[], now = Date.now()): Promise<boolean> {
  if (!value) return false;
  let decoded: string;
  try {
    decoded = decodeURIComponent(value);
  } catch {
    return false;
  }
  const cookie = `${SESSION_COOKIE}=${encodeURIComponent(decoded)}`;
  let valid = false;
  for (const token of tokens) {
    const signed = (await parseSigned(cookie, secretOf(key, token), SESSION_COOKIE))[SESSION_COOKIE];
    if (typeof signed === "string" && live(signed, now)) valid = true;
  }
  return valid;
}

/** A signed part that has not expired, and does not outlive SESSION_SECONDS from `now`. */
function live(signed: string, now: number): boolean {
  const match = /^v3\.([0-9]{1,12})$/.exec(signed);
  if (!match) return false;
  const expires = Number(match[1]);
  const seconds = now / 1000;
  return expires > seconds && expires <= seconds + SESSION_SECONDS;
}

export async function startSession(c: Context, key: string, token: string): Promise<void> {
  await setSignedCookie(c, SESSION_COOKIE, signedPart(Date.now()), secretOf(key, token), { ...OPTIONS, maxAge: SESSION_SECONDS });
}

export function endSession(c: Context): void {
  deleteCookie(c, SESSION_COOKIE, OPTIONS);
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
