/**
 * `POST /admin/sessions/revoke`: ends every browser session of the status page at once, by
 * replacing the session key (workers/api/status/session.ts). Every isolate reads the new key within
 * SESSION_KEY_TTL_MS; this one uses it at once. Tokens are untouched (rotate them in their secrets).
 */
import { Hono } from "hono";
import type { ApiEnv } from "../context";
import { revokeSessions, SESSION_KEY_TTL_MS } from "../status/session";

export const sessions = new Hono<ApiEnv>().post("/admin/sessions/revoke", async (c) => {
  await revokeSessions(c.var.host);
  return c.json({ revoked: true, everywhereWithinSeconds: SESSION_KEY_TTL_MS / 1000 });
});
