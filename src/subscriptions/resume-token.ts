/**
 * A subscription's resume token (the `id` of its events, sent back as `Last-Event-ID`): the
 * changelog topic of the watched store and, for each of its partitions the watch reads, the
 * offset it has read up to — every change below it was sent, none at or after it. Changelog
 * offsets keep their meaning through migrations, crashes, corruptions and restorations (the
 * changelog is the history of committed writes, I5), so a token stays valid as long as the
 * changelog holds every record from its offsets on (docs/subscriptions.md).
 *
 * Encoded as `w1.` and the base64url of `{"t": topic, "o": [[partition, offset], …]}`: opaque to
 * clients; a token that does not decode to exactly what encoding gives back is not one of ours.
 */
import { decodeBase64Url, encodeBase64Url } from "hono/utils/encode";

/** Offsets read up to, by changelog partition. */
export type Positions = ReadonlyMap<number, number>;

export interface ResumeToken {
  readonly topic: string;
  readonly positions: Positions;
}

const PREFIX = "w1.";
/** Longest token taken (a store of thousands of partitions stays well below). */
export const MAX_TOKEN_LENGTH = 65_536;

export function encodeToken({ topic, positions }: ResumeToken): string {
  const o = [...positions].sort(([a], [b]) => a - b);
  const bytes = new TextEncoder().encode(JSON.stringify({ t: topic, o }));
  return PREFIX + encodeBase64Url(bytes.buffer as ArrayBuffer).replace(/=+$/, "");
}

/** The token `text` stands for; undefined when it is not one `encodeToken` made. */
export function decodeToken(text: string): ResumeToken | undefined {
  if (text.length > MAX_TOKEN_LENGTH || !text.startsWith(PREFIX)) return undefined;
  const body = text.slice(PREFIX.length);
  if (!/^[A-Za-z0-9_-]+$/.test(body) || body.length % 4 === 1) return undefined;
  try {
    const parsed = JSON.parse(new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(decodeBase64Url(body))) as { t?: unknown; o?: unknown };
    if (typeof parsed.t !== "string" || !Array.isArray(parsed.o)) return undefined;
    const positions = new Map<number, number>();
    for (const pair of parsed.o) {
      if (!Array.isArray(pair) || pair.length !== 2 || !pair.every((n) => Number.isSafeInteger(n) && n >= 0)) return undefined;
      positions.set(pair[0], pair[1]);
    }
    const token = { topic: parsed.t, positions };
    return encodeToken(token) === text ? token : undefined;
  } catch {
    return undefined;
  }
}
