/**
 * docs/dsl.md documents every option of `Materialized.as(store, options)`: one row per field of
 * `MaterializedOptions` (src/streams/dsl/materialized.ts) in its Materialized section, so an option
 * added there without its documentation fails here.
 */
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { expect, it } from "vitest";

const read = (path: string) => readFileSync(fileURLToPath(new URL(`../../${path}`, import.meta.url)), "utf8");

it("dsl.md has a row for each option of Materialized.as", () => {
  const source = read("src/streams/dsl/materialized.ts");
  const body = /export interface MaterializedOptions<K, V> \{([\s\S]*?)\n\}/.exec(source)?.[1];
  expect(body, "MaterializedOptions in materialized.ts").toBeDefined();
  const options = [...body!.matchAll(/readonly (\w+)\?:/g)].map((m) => m[1]!);
  expect(options).toEqual(expect.arrayContaining(["key", "value", "retentionMs", "caching"]));

  const dsl = read("docs/dsl.md");
  const start = dsl.indexOf("## Stores: `Materialized`");
  expect(start, "a Materialized section in dsl.md").toBeGreaterThanOrEqual(0);
  const end = dsl.indexOf("\n## ", start + 1);
  const section = dsl.slice(start, end < 0 ? undefined : end);
  for (const option of options) expect(section, option).toMatch(new RegExp(`^\\| \`${option}\` \\|`, "m"));
  expect(section).toContain('Materialized.as("orders-per-minute", { retentionMs:');
});
