/**
 * How a browser authenticates a subscription (docs/subscriptions.md, docs/security.md): neither
 * `EventSource` nor the `WebSocket` constructor can set `Authorization`. So the watch paths also
 * take
 * - the status page's session cookie (`/login`), as the pages a browser opens do: read only, GET
 *   only, and refused from a page of another origin (authenticate.ts, origin.ts) — a WebSocket
 *   handshake always carries `Origin`, which stops another site opening one with the cookie;
 * - on a WebSocket, a bearer token as a subprotocol: the client offers `edge-streams` and
 *   `bearer.<base64url of the token>`, and the server answers `edge-streams` (never echoing the
 *   token). A subprotocol is a header, so it stays out of URLs and their logs, which a query
 *   parameter would not.
 */
import { decodeBase64Url } from "hono/utils/encode";

/** The subprotocol a subscription's socket speaks (docs/subscriptions.md). */
export const SUBPROTOCOL = "edge-streams";
const BEARER_PREFIX = "bearer.";

/** A watch path: `/stores/:store/watch`, `/stores/:store/keys/:key/watch`, `/stores/:store/windows/:key/watch`, `/topics/:topic/watch`. */
export function isWatchPath(path: string): boolean {
  return /^\/stores\/[^/]+\/(watch|(keys|windows)\/.+\/watch)$/.test(path) || /^\/topics\/[^/]+\/watch$/.test(path);
}

/** The subprotocols a WebSocket handshake offers, in order. */
export function offeredSubprotocols(request: Request): string[] {
  const header = request.headers.get("Sec-WebSocket-Protocol");
  return header === null
    ? []
    : header
        .split(",")
        .map((p) => p.trim())
        .filter((p) => p !== "");
}

/**
 * The token a WebSocket handshake carries as a `bearer.` subprotocol; null without one, and ""
 * (a failed try) for one that does not decode or is not offered with `edge-streams`.
 */
export function subprotocolToken(request: Request): string | null {
  if (request.headers.get("Upgrade")?.toLowerCase() !== "websocket") return null;
  const offered = offeredSubprotocols(request);
  const bearer = offered.find((p) => p.startsWith(BEARER_PREFIX));
  if (bearer === undefined) return null;
  if (!offered.includes(SUBPROTOCOL)) return "";
  try {
    return new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(decodeBase64Url(bearer.slice(BEARER_PREFIX.length)));
  } catch {
    return "";
  }
}
