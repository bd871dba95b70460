/**
 * Authentication: a bearer token on the API, HTTP Basic (user `edge`, password the same token) on
 * the Kafka REST endpoint. Tokens are compared in constant time; nothing about them is logged.
 */
import { timingSafeEqual } from "hono/utils/buffer";
import { ApiError } from "./http-error";

export const KAFKA_REST_USERNAME = "edge";

/**
 * The token requests must present, or null when none is required. Outside local development an
 * unset token is a configuration error: the Worker refuses to serve rather than serve openly.
 */
export function requiredToken(token: string | undefined, localDevelopment: boolean): string | null {
  if (token) return token;
  if (localDevelopment) return null;
  throw new ApiError(500, "misconfigured", "API_TOKEN is not set: set it with `wrangler secret put API_TOKEN`; refusing to serve");
}

export async function bearerMatches(header: string | undefined, token: string): Promise<boolean> {
  const match = /^Bearer\s+(.+)$/i.exec(header ?? "");
  return match ? timingSafeEqual(match[1]!.trim(), token) : false;
}

export async function basicMatches(header: string | undefined, token: string): Promise<boolean> {
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
  const [userOk, passwordOk] = await Promise.all([timingSafeEqual(user, KAFKA_REST_USERNAME), timingSafeEqual(password, token)]);
  return userOk && passwordOk;
}
