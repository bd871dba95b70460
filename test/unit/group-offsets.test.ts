/** Consumer groups' commit rules (src/log/partition/group-offsets.ts): pure. */
import { describe, expect, it } from "vitest";
import { InvalidRecord, ProducerFenced } from "../../src/log/errors";
import { checkCommit, committerEpoch } from "../../src/log/partition/group-offsets";

describe("committerEpoch", () => {
  it("keeps the committer's epoch, or the held one for a commit without an epoch while none is held", () => {
    expect(committerEpoch("g", null, null)).toBeNull();
    expect(committerEpoch("g", 3, null)).toBe(3);
    expect(committerEpoch("g", 3, 3)).toBe(3);
    expect(committerEpoch("g", 4, 3)).toBe(4);
  });

  it("fences a commit from an older epoch, and one without an epoch once an epoch holds the group", () => {
    expect(() => committerEpoch("g", 2, 3)).toThrow(ProducerFenced);
    expect(() => committerEpoch("g", null, 0)).toThrow(/group g: a commit without an epoch is fenced by epoch 0/);
  });
});

describe("checkCommit", () => {
  it("takes a group of 1 to 255 characters, a non-negative offset, string metadata and a non-negative epoch", () => {
    expect(() => checkCommit("g", { offset: 0, metadata: "" })).not.toThrow();
    expect(() => checkCommit("g".repeat(255), { offset: 9, metadata: "m", epoch: 2 })).not.toThrow();
    expect(() => checkCommit("", { offset: 0, metadata: "" })).toThrow(InvalidRecord);
    expect(() => checkCommit("g".repeat(256), { offset: 0, metadata: "" })).toThrow(InvalidRecord);
    expect(() => checkCommit("g", { offset: -1, metadata: "" })).toThrow(InvalidRecord);
    expect(() => checkCommit("g", { offset: 1.5, metadata: "" })).toThrow(InvalidRecord);
    expect(() => checkCommit("g", { offset: 0, metadata: 1 as unknown as string })).toThrow(InvalidRecord);
    expect(() => checkCommit("g", { offset: 0, metadata: "", epoch: -1 })).toThrow(InvalidRecord);
  });
});
