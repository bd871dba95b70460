/**
 * Authentication: a bearer token on the API, HTTP Basic (user `edge`, password the same token) on
 * the Kafka REST endpoint. Tokens are compared in constant time; nothing about them is logged.
 */
import { ApiError } from "./http-error";
import { missingTokenMessage } from "./missing-token";

export const KAFKA_REST_USERNAME = "edge";

/**
 * The token requests must present, or null when none is required. Outside local development an
 * unset token is a configuration error: the Worker refuses to serve rather than serve openly, saying
 * how to set one where it runs (`requestUrl` tells `wrangler dev` from a deployment).
 */
export function requiredToken(token: string | undefined, localDevelopment: boolean, requestUrl: string): string | null {
  if (token) return token;
  if (localDevelopment) return null;
  throw new ApiError(500, "misconfigured", missingTokenMessage(requestUrl));
}

/**
 * Whether `given` is `expected` (a configured secret), in time that says nothing about the secret:
 * every character of `given` is compared, against the secret's characters in turn, and the
 * differences (lengths included) are combined without an early exit. Time depends on the length of
 * `given` only, which its sender knows. (Hashing both first costs a digest per request.)
 */
export function secretMatches(given: string, expected: string): boolean {
  if (expected.length === 0) return false;
  let difference = given.length ^ expected.length;
  for (let i = 0; i < given.length; i++) difference |= given.charCodeAt(i) ^ expected.charCodeAt(i % expected.length);
  return difference === 0;
}

export function bearerMatches(header: string | undefined, token: string): boolean {
  const match = /^Bearer\s+(.+)$/i.exec(header ?? "");
  return match ? secretMatches(match[1]!.trim(), token) : false;
}

export function basicMatches(header: string | undefined, token: string): boolean {
  const match = /^Basic\s+([A-Za-z0-9+/=]+)$/i.exec(header ?? "");
  if (!match) return false;
  let decoded: string;
  try {
    decoded = atob(match[1]!);
  } catch {
    return false;
  }
  const colon = decoded.indexOf(":");
  if (colon < 0) return false;
  const [user, password] = [decoded.slice(0, colon), decoded.slice(colon + 1)];
  // Both comparisons always run, so timing does not tell which part was wrong.
  const userOk = secretMatches(user, KAFKA_REST_USERNAME);
  const passwordOk = secretMatches(password, token);
  return userOk && passwordOk;
}
