/**
 * The one constant-time comparison (src/util/secret-matches.ts), as the API's tokens use it (workers/api/auth.ts): equal strings match, and nothing else does —
 * not a prefix, an extension, a string of the same length, or an empty one.
 */
import { describe, expect, it } from "vitest";
import { secretMatches } from "../../src/util/secret-matches";
import { basicMatches, bearerMatches } from "../../workers/api/auth";

describe("secretMatches", () => {
  const secret = "s3cret-token";
  it("matches the secret itself, and only it", () => {
    expect(secretMatches(secret, secret)).toBe(true);
    for (const given of ["", "s3cret", `${secret}x`, "s3cret-tokeN", "x3cret-token", `${secret}${secret}`, "\u0000".repeat(secret.length)]) {
      expect(secretMatches(given, secret), JSON.stringify(given)).toBe(false);
    }
  });

  it("never matches an empty secret", () => {
    expect(secretMatches("", "")).toBe(false);
  });

  it("reads the bearer and basic schemes", () => {
    expect(bearerMatches(`Bearer ${secret}`, secret)).toBe(true);
    expect(bearerMatches(`bearer   ${secret}`, secret)).toBe(true);
    expect(bearerMatches(`Bearer ${secret}x`, secret)).toBe(false);
    expect(bearerMatches(undefined, secret)).toBe(false);
    expect(basicMatches(`Basic ${btoa(`edge:${secret}`)}`, secret)).toBe(true);
    expect(basicMatches(`Basic ${btoa(`other:${secret}`)}`, secret)).toBe(false);
    expect(basicMatches(`Basic ${btoa(`edge:${secret}x`)}`, secret)).toBe(false);
  });
});
