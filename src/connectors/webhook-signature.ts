/**
 * The signature of a webhook sink's request (docs/connectors.md#verifying-a-request), in the
 * style of Stripe's: header `Edge-Streams-Signature: t=<unix seconds>,v1=<hex>`, where `<hex>` is
 * the HMAC-SHA256, with the sink's secret as key, of `<t>.<body>` (the timestamp, a dot, the raw
 * request body as sent, UTF-8). Signing the time with the body lets a receiver refuse a replay
 * older than its tolerance. `verifyWebhookSignature` is what a receiver runs (exported by the
 * package for receivers written in TypeScript).
 */

import { secretMatches } from "../util/secret-matches";

export const SIGNATURE_HEADER = "Edge-Streams-Signature";

const encoder = new TextEncoder();

/** HMAC-SHA256 of `data` with key `secret`, in lowercase hex. */
export async function hmacSha256Hex(secret: string, data: string): Promise<string> {
  const key = await crypto.subtle.importKey("raw", encoder.encode(secret), { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  const mac = new Uint8Array(await crypto.subtle.sign("HMAC", key, encoder.encode(data)));
  return Array.from(mac, (byte) => byte.toString(16).padStart(2, "0")).join("");
}

/** The header's value for `body` sent at `nowMs`. */
export async function signWebhook(secret: string, body: string, nowMs: number): Promise<string> {
  const t = Math.floor(nowMs / 1000);
  return `t=${t},v1=${await hmacSha256Hex(secret, `${t}.${body}`)}`;
}

/**
 * Whether `header` signs `body` with `secret`, at a time within `toleranceMs` of `nowMs` (default
 * five minutes). Compares in constant time (src/util/secret-matches.ts).
 */
export async function verifyWebhookSignature(secret: string, header: string | null, body: string, nowMs = Date.now(), toleranceMs = 300_000): Promise<boolean> {
  const parts = new Map((header ?? "").split(",").map((part) => part.trim().split("=", 2) as [string, string | undefined]));
  const t = Number(parts.get("t"));
  const given = parts.get("v1");
  if (!Number.isSafeInteger(t) || given === undefined || Math.abs(nowMs - t * 1000) > toleranceMs) return false;
  return secretMatches(given, await hmacSha256Hex(secret, `${t}.${body}`));
}
