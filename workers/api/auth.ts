/**
 * Reading credentials: a bearer token on the API, HTTP Basic (user `edge`, password a token) on
 * the Kafka REST endpoint. Tokens are compared in constant time (src/util/secret-matches.ts); nothing about them is logged.
 * Which tokens exist and what they grant is credentials.ts; the middleware that uses both is
 * authenticate.ts.
 */

import { secretMatches } from "../../src/util/secret-matches";

export const KAFKA_REST_USERNAME = "edge";

/** The token of an `Authorization: Bearer <token>` header; null for any other header or none. */
export function bearerToken(header: string | undefined): string | null {
  const match = /^Bearer\s+(.+)$/i.exec(header ?? "");
  return match ? match[1]!.trim() : null;
}

/**
 * The password of an `Authorization: Basic …` header whose user is `edge`; null for any other
 * header or user (an empty string for a malformed one, so that it still counts as a failed try).
 */
export function basicPassword(header: string | undefined): string | null {
  const match = /^Basic\s+(\S*)$/i.exec(header ?? "");
  if (!match) return null;
  let decoded: string;
  try {
    decoded = atob(match[1]!);
  } catch {
    return "";
  }
  const colon = decoded.indexOf(":");
  if (colon < 0) return "";
  // The user is compared in constant time too, and a wrong one gives a password nothing matches.
  return secretMatches(decoded.slice(0, colon), KAFKA_REST_USERNAME) ? decoded.slice(colon + 1) : "";
}

export function bearerMatches(header: string | undefined, token: string): boolean {
  const given = bearerToken(header);
  return given !== null && secretMatches(given, token);
}

export function basicMatches(header: string | undefined, token: string): boolean {
  const given = basicPassword(header);
  return given !== null && secretMatches(given, token);
}
