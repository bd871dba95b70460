/**
 * The key that signs the status page's browser sessions (workers/api/status/session.ts): random,
 * kept in the coordinator's storage (its settings row, ./settings.ts), made on first use and
 * replaced by `POST /admin/sessions/revoke`, which ends every session at once.
 */
import { encodeBase64Url } from "hono/utils/encode";

/** 32 random bytes, base64url. */
export function newSessionKey(): string {
  return encodeBase64Url(crypto.getRandomValues(new Uint8Array(32)).buffer).replace(/=+$/, "");
}
