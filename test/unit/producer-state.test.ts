/** The idempotent producer's rules (src/log/partition/producer-state-manager.ts): pure. */
import { describe, expect, it } from "vitest";
import { InvalidRecord, OutOfOrderSequence, ProducerFenced } from "../../src/log/errors";
import { checkProducerId, epochOf, sequenceOf } from "../../src/log/partition/producer-state-manager";

const producer = (epoch: number, sequence: number) => ({ producerId: "p", epoch, sequence });

describe("epochOf", () => {
  it("takes a producer's first epoch and a newer one as new, starting at sequence 0", () => {
    expect(epochOf(producer(0, 0), undefined)).toBe("new");
    expect(epochOf(producer(3, 0), 2)).toBe("new");
    expect(epochOf(producer(2, 7), 2)).toBe("current");
  });

  it("fences an older epoch, and refuses a new epoch that does not start at 0", () => {
    expect(() => epochOf(producer(1, 0), 2)).toThrow(ProducerFenced);
    expect(() => epochOf(producer(3, 1), 2)).toThrow(OutOfOrderSequence);
    expect(() => epochOf(producer(0, 4), undefined)).toThrow(OutOfOrderSequence);
  });
});

describe("sequenceOf", () => {
  it("appends the next sequence, looks up an earlier one as a retry, and refuses a gap", () => {
    expect(sequenceOf(producer(0, 0), undefined)).toBe("next");
    expect(sequenceOf(producer(0, 5), 4)).toBe("next");
    expect(sequenceOf(producer(0, 2), 4)).toBe("earlier");
    expect(sequenceOf(producer(0, 4), 4)).toBe("earlier");
    expect(() => sequenceOf(producer(0, 6), 4)).toThrow(/sent sequence 6, expected 5/);
    expect(() => sequenceOf(producer(0, 1), undefined)).toThrow(OutOfOrderSequence);
  });
});

describe("checkProducerId", () => {
  it("takes an id of 1 to 512 characters with non-negative integer epoch and sequence", () => {
    expect(() => checkProducerId(producer(0, 0))).not.toThrow();
    expect(() => checkProducerId({ producerId: "x".repeat(512), epoch: 1, sequence: 2 })).not.toThrow();
    for (const bad of [
      { producerId: "", epoch: 0, sequence: 0 },
      { producerId: "x".repeat(513), epoch: 0, sequence: 0 },
      { producerId: "p", epoch: -1, sequence: 0 },
      { producerId: "p", epoch: 0.5, sequence: 0 },
      { producerId: "p", epoch: 0, sequence: -1 },
    ]) {
      expect(() => checkProducerId(bad), JSON.stringify(bad).slice(0, 40)).toThrow(InvalidRecord);
    }
  });
});
