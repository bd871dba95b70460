/** A subscription hub's counters as its row keeps them (src/subscriptions/hub-counters.ts): restored as saved, saved only when changed. */
import { describe, expect, it } from "vitest";
import { HubCounters } from "../../src/subscriptions/hub-counters";

describe("HubCounters saved and restored", () => {
  it("restores what was saved, its start included, and goes on counting from there", () => {
    const counters = new HubCounters(1_000);
    counters.pushed += 12;
    counters.reads += 3;
    counters.drops.resync++;
    counters.refuse({ hub: 0, key: 5 }, { perHub: 10, perKey: 5 });
    const restored = HubCounters.restore(structuredClone(counters.unsaved()))!;
    expect(restored.metrics(0)).toEqual(counters.metrics(0));
    restored.pushed++;
    expect(restored.metrics(2)).toMatchObject({ pushed: 13, since: 1_000 });
  });

  it("has nothing to save until a count changes, and nothing again once saved", () => {
    const counters = new HubCounters(1_000);
    expect(counters.unsaved()).toBeDefined();
    expect(counters.unsaved()).toBeUndefined();
    counters.reads++;
    expect(counters.unsaved()).toMatchObject({ reads: 1 });
    expect(counters.unsaved()).toBeUndefined();
    expect(HubCounters.restore({ ...new HubCounters(5).toSaved() })!.unsaved()).toBeUndefined();
  });

  it("restores nothing from a row that is not counters (none yet, or damaged): the hub starts again", () => {
    const saved = new HubCounters(1_000).toSaved();
    for (const bad of [
      undefined,
      null,
      "x",
      { ...saved, pushed: -1 },
      { ...saved, drops: { slow: 1 } },
      { ...saved, refused: undefined },
      { ...saved, since: 1.5 },
    ])
      expect(HubCounters.restore(bad)).toBeUndefined();
  });
});
