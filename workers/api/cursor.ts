/**
 * Cursors of paged routes (`/stores/:store/keys`, `/tasks`, `/metrics`, the status page): the
 * base64url of the UTF-8 of where the last page ended (a key, an instance name). A cursor that
 * does not decode to exactly what encoding would give back is not one of ours.
 */
import { decodeBase64Url, encodeBase64Url } from "hono/utils/encode";

const encoder = new TextEncoder();

export function encodeCursor(key: string): string {
  return encodeBase64Url(encoder.encode(key).buffer).replace(/=+$/, "");
}

/** The key a cursor names; undefined when it is not one this route made. */
export function decodeCursor(cursor: string): string | undefined {
  if (!/^[A-Za-z0-9_-]*$/.test(cursor) || cursor.length % 4 === 1) return undefined;
  try {
    const key = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(decodeBase64Url(cursor));
    return encodeCursor(key) === cursor ? key : undefined;
  } catch {
    return undefined;
  }
}
