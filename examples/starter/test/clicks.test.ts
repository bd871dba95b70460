import { env } from "cloudflare:workers";
import { TestDriver } from "edge-streams/testing";
import { expect, it } from "vitest";
import streams from "../src/index";

const driver = new TestDriver(env, streams);

it("counts clicks per page", async () => {
  await driver.pipe("clicks", [
    { key: "/home", value: { user: "ada" } },
    { key: "/home", value: { user: "bob" } },
    { key: "/about", value: { user: "ada" } },
  ]);
  await driver.runUntilQuiet();
  expect(await driver.get("clicks-per-page", "/home")).toBe(2);
  expect(await driver.get("clicks-per-page", "/about")).toBe(1);
  expect((await driver.read("click-counts")).map((r) => [r.key, r.value])).toContainEqual(["/home", "2"]);
});
