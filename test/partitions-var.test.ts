/**
 * The default example's partition count comes from the `PARTITIONS` var (default 4): the
 * application is built from the environment (`defineEdgeStreams((env) => topology)`), once per
 * configuration; a Worker defined by a plain topology keeps working as before. The 256-partition
 * runtime is tested by test/node/scale.test.ts.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { ConfigError, defineEdgeStreams } from "../workers/index";
import { DEFAULT_PARTITIONS, ordersTotalsTopology, partitionsOf } from "../examples/orders-totals/topology";
import { streams } from "./support/orders-app";
import { TOKEN } from "./support/api";

describe("PARTITIONS", () => {
  it("sizes orders and totals, and so the tasks, from the environment", () => {
    expect(streams.applicationFor(env).taskIds()).toEqual(["0_0", "0_1", "0_2", "0_3"]);
    const big = streams.applicationFor({ ...env, PARTITIONS: "1024" });
    expect(big.taskIds()).toHaveLength(1_024);
    expect(big.catalog.partitions("orders")).toBe(1_024);
    expect(big.catalog.partitions("totals")).toBe(1_024);
    expect(big.catalog.partitions("edge-streams-totals-changelog")).toBe(1_024);
    // The same vars again: the same application, also from another environment object.
    expect(streams.applicationFor({ ...env, PARTITIONS: "1024" })).toBe(big);
    expect(partitionsOf({})).toBe(DEFAULT_PARTITIONS);
    expect(partitionsOf({ PARTITIONS: " 128 " })).toBe(128);
  });

  it("refuses what is not a whole number from 1 to 10,000, naming the var", () => {
    for (const bad of ["0", "-4", "1.5", "four", "10001", "1e3"]) {
      expect(() => partitionsOf({ PARTITIONS: bad }), bad).toThrow(ConfigError);
      expect(() => partitionsOf({ PARTITIONS: bad }), bad).toThrow(/PARTITIONS: .* is not a whole number from 1 to 10000/);
    }
  });

  it("a Worker with an invalid PARTITIONS answers 500 misconfigured, saying why", async () => {
    const request = new Request("http://edge.test/tasks", { headers: { Authorization: `Bearer ${TOKEN}` } });
    const response = await streams.fetch(
      request,
      { ...env, PARTITIONS: "zero" } as typeof env,
      { waitUntil() {}, passThroughOnException() {}, props: {} } as unknown as ExecutionContext,
    );
    expect(response.status).toBe(500);
    expect(await response.json()).toMatchObject({ error: "misconfigured", message: expect.stringMatching(/PARTITIONS/) });
  });

  it("a Worker defined by a plain topology has its application at once, as before", () => {
    const fixed = defineEdgeStreams(ordersTotalsTopology("fail", 3));
    expect(fixed.application.taskIds()).toHaveLength(3);
    expect(fixed.applicationFor(env)).toBe(fixed.application);
    expect(() => streams.application).toThrow(/applicationFor\(env\)/);
  });

  it("survives being copied with a spread, as wrangler dev's middleware copies the default export", () => {
    const copy = { ...streams };
    expect(Object.keys(copy)).not.toContain("application");
    expect(copy.fetch).toBe(streams.fetch);
    expect(copy.TaskObject).toBe(streams.TaskObject);
    // A Worker defined by a plain topology still has it.
    expect(defineEdgeStreams(ordersTotalsTopology("fail", 3)).application.taskIds()).toHaveLength(3);
  });
});
