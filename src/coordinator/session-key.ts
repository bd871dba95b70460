/**
 * The key that signs the status page's browser sessions (workers/api/status/session.ts): random,
 * kept in the coordinator's storage (its settings row, ./settings.ts), made on first use and
 * replaced by `POST /admin/sessions/revoke`, which ends every session at once.
 */

/** 32 random bytes, base64url. */
export function newSessionKey(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(32));
  let binary = "";
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return btoa(binary).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}
