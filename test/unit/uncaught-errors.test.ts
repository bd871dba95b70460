/** The uncaught-error policy as a task applies it (src/task/uncaught-errors.ts): pure. */
import { describe, expect, it } from "vitest";
import { InvalidRecord, RecordTooLarge } from "../../src/log/errors";
import type { Topology, UncaughtErrorPolicy } from "../../src/streams/topology/topology";
import { processingFailure, uncaughtErrorPolicy } from "../../src/task/uncaught-errors";

const choosing = (policy: UncaughtErrorPolicy) => ({ uncaughtErrorPolicy: () => policy }) as unknown as Topology;

describe("uncaughtErrorPolicy", () => {
  it("keeps the topology's choice, but never retries a record the log refuses, however deep the cause", () => {
    expect(uncaughtErrorPolicy(choosing("retry"), new Error("boom"))).toBe("retry");
    expect(uncaughtErrorPolicy(choosing("retry"), new RecordTooLarge("too large"))).toBe("fail");
    expect(uncaughtErrorPolicy(choosing("retry"), new Error("wrapped", { cause: new InvalidRecord("bad") }))).toBe("fail");
    expect(uncaughtErrorPolicy(choosing("shutdown-application"), new RecordTooLarge("too large"))).toBe("shutdown-application");
  });

  it("says why processing stopped", () => {
    expect(processingFailure(new Error("boom"))).toBe("processing failed: boom");
    expect(processingFailure("text")).toBe("processing failed: text");
  });
});
