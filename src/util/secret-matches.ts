/**
 * The one constant-time comparison of secrets: the API's tokens (workers/api/auth.ts) and a
 * webhook's signature (src/connectors/webhook-signature.ts). The status page's session cookie is
 * checked by hono's signed cookies (`crypto.subtle.verify`).
 */

/**
 * Whether `given` is `expected` (a configured secret), in time that says nothing about the secret:
 * every character of `given` is compared, against the secret's characters in turn, and the
 * differences (lengths included) are combined without an early exit. Time depends on the length of
 * `given` only, which its sender knows. (Hashing both first costs a digest per request.) An empty
 * secret matches nothing.
 */
export function secretMatches(given: string, expected: string): boolean {
  if (expected.length === 0) return false;
  let difference = given.length ^ expected.length;
  for (let i = 0; i < given.length; i++) difference |= given.charCodeAt(i) ^ expected.charCodeAt(i % expected.length);
  return difference === 0;
}
