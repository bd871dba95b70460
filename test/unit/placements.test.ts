/**
 * Real placements: `PLACEMENTS` entries `name`, `name:hint` or `name:hint:jurisdiction`; the
 * objects of a placement — its task instances and its restore workers — are created with its
 * location hint, in its jurisdiction's namespace. Log partitions and the coordinator belong to no
 * placement. A real run with hints and a jurisdiction is test/node/scale.test.ts. Plain Node: the
 * namespaces here record how stubs are asked for.
 */
import { describe, expect, it } from "vitest";
import { ordersTotalsTopology } from "../../examples/orders-totals/topology";
import { Host } from "../../platform/host";
import type { EdgeStreamsEnv } from "../../platform/bindings";
import { readConfig } from "../../src/config";
import { parsePlacements } from "../../src/placements";
import { placeStandbys } from "../../src/coordinator/standbys";
import { assignActives } from "../../src/coordinator/assignor";
import { Application } from "../../src/application";

/** The default example's application (4 partitions, as test/support/orders-app.ts builds it in workerd). */
const application = new Application(ordersTotalsTopology({ deadLetterQueueTopic: "orders-dead-letters" }, 4));

type Call = { binding: string; jurisdiction?: string; name: string; options?: unknown };

/** Namespaces that record how stubs are asked for (`jurisdictionError`: what `jurisdiction()` throws, as workerd does). */
function recordingEnv(vars: Record<string, string>, jurisdictionError?: string): { env: EdgeStreamsEnv; calls: Call[] } {
  const calls: Call[] = [];
  const namespace = (binding: string, jurisdiction?: string): unknown => ({
    getByName: (name: string, options?: unknown) => {
      calls.push({ binding, name, ...(jurisdiction ? { jurisdiction } : {}), ...(options ? { options } : {}) });
      return {};
    },
    jurisdiction: (j: string) => {
      if (jurisdictionError) throw new Error(jurisdictionError);
      return namespace(binding, j);
    },
  });
  const env = { ...vars } as Record<string, unknown>;
  for (const binding of ["LOG_PARTITION", "CONSUMER_GROUP", "TASK_OBJECT", "COORDINATOR", "RESTORE_WORKER"]) env[binding] = namespace(binding);
  return { env: env as unknown as EdgeStreamsEnv, calls };
}

describe("PLACEMENTS", () => {
  it("takes names, location hints and jurisdictions", () => {
    expect(parsePlacements("a,b")).toEqual([{ name: "a" }, { name: "b" }]);
    expect(parsePlacements(" eu:weur:eu , us:enam ,apac::fedramp")).toEqual([
      { name: "eu", locationHint: "weur", jurisdiction: "eu" },
      { name: "us", locationHint: "enam" },
      { name: "apac", jurisdiction: "fedramp" },
    ]);
    const config = readConfig({ PLACEMENTS: "eu:weur,us:enam" });
    expect(config.PLACEMENTS).toEqual(["eu", "us"]);
    expect(config.placements).toEqual([
      { name: "eu", locationHint: "weur" },
      { name: "us", locationHint: "enam" },
    ]);
  });

  it("refuses unknown hints and jurisdictions, bad names, repeats and extra parts, saying which", () => {
    const cases: [string, RegExp][] = [
      ["eu:europe", /"europe" is not a location hint/],
      ["eu:weur:ch", /"ch" is not a jurisdiction/],
      ["e u", /placement names are/],
      ["a,a:weur", /listed twice/],
      ["a:weur:eu:x", /is not name, name:hint or name:hint:jurisdiction/],
      [" , ", /name at least one placement/],
    ];
    for (const [value, message] of cases) expect(() => readConfig({ PLACEMENTS: value }), value).toThrow(message);
  });

  it("creates a placement's task instances and restore workers with its hint, in its jurisdiction", () => {
    const { env, calls } = recordingEnv({ PLACEMENTS: "eu:weur:eu,us:enam,plain", RESTORE_SHARDS: "2" });
    const host = Host.of(application, env);
    host.taskObject({ taskId: "0_1", placement: "eu" });
    host.taskObject({ taskId: "0_1", placement: "us" });
    host.taskObject({ taskId: "0_1", placement: "plain" });
    host.restoreWorker("eu", 1);
    host.objects.taskObject("0_2@us");
    host.objects.restoreWorker("restore@eu#1");
    // An instance at a placement no longer configured: neither hint nor jurisdiction.
    host.objects.taskObject("0_3@gone");
    host.coordinator();
    host.partition({ topic: "orders", partition: 0 });
    expect(calls).toEqual([
      { binding: "TASK_OBJECT", jurisdiction: "eu", name: "0_1@eu", options: { locationHint: "weur" } },
      { binding: "TASK_OBJECT", name: "0_1@us", options: { locationHint: "enam" } },
      { binding: "TASK_OBJECT", name: "0_1@plain" },
      { binding: "RESTORE_WORKER", jurisdiction: "eu", name: "restore@eu#1", options: { locationHint: "weur" } },
      { binding: "TASK_OBJECT", name: "0_2@us", options: { locationHint: "enam" } },
      { binding: "RESTORE_WORKER", jurisdiction: "eu", name: "restore@eu#1", options: { locationHint: "weur" } },
      { binding: "TASK_OBJECT", name: "0_3@gone" },
      { binding: "COORDINATOR", name: "coordinator" },
      { binding: "LOG_PARTITION", name: "orders/0" },
    ]);
  });

  it("uses the unrestricted namespace only where workerd says it has no jurisdictions (local), and fails otherwise", () => {
    const local = recordingEnv({ PLACEMENTS: "eu:weur:eu" }, "Jurisdiction restrictions are not implemented in workerd.");
    Host.of(application, local.env).taskObject({ taskId: "0_0", placement: "eu" });
    expect(local.calls).toEqual([{ binding: "TASK_OBJECT", name: "0_0@eu", options: { locationHint: "weur" } }]);
    const broken = recordingEnv({ PLACEMENTS: "eu:weur:eu" }, "something else went wrong");
    expect(() => Host.of(application, broken.env).taskObject({ taskId: "0_0", placement: "eu" })).toThrow(/something else/);
    expect(broken.calls).toEqual([]);
  });

  it("standbys always go to another placement than their active", () => {
    const placements = ["eu", "us"];
    const tasks = Array.from({ length: 256 }, (_, i) => `0_${i}`);
    const actives = assignActives(tasks, placements, []);
    const standbys = placeStandbys(actives, placements, [], 3);
    expect(standbys).toHaveLength(256);
    const activeAt = new Map(actives.map((a) => [a.taskId, a.placement]));
    for (const s of standbys) expect(s.placement).not.toBe(activeAt.get(s.taskId));
  });
});
