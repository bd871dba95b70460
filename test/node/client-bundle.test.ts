/** The client modules the page-views live page serves (examples/page-views/public/client/) are what client/ gives now. */
import { execFileSync } from "node:child_process";
import { describe, expect, it } from "vitest";

describe("npm run build:client", () => {
  it("has left the served copies of edge-streams/client up to date", () => {
    expect(() => execFileSync("node", ["scripts/build-client.mjs", "--check"], { stdio: "pipe" })).not.toThrow();
  });
});
