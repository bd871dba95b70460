import { describe, expect, it } from "vitest";
import { murmur2, partitionForKey } from "../../src/log/partitioner";

const bytes = (s: string) => new TextEncoder().encode(s);

describe("murmur2", () => {
  // Kafka's own vectors (clients UtilsTest.testMurmur2).
  it.each([
    ["21", -973932308],
    ["foobar", -790332482],
    ["a-little-bit-long-string", -985981536],
    ["a-little-bit-longer-string", -1486304829],
    ["lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971],
    ["abc", 479470107],
  ])("hashes %j as the Java client does", (input, expected) => {
    expect(murmur2(bytes(input))).toBe(expected);
  });
});

describe("partitionForKey", () => {
  it.each([
    // toPositive(murmur2("foobar")) = 1357151166
    ["foobar", 10, 6],
    ["foobar", 50, 16],
    // A 12-partition table published with Kafka-compatible clients.
    ["1039-36302-36840-2-9f138052", 12, 4],
    ["1388-20023-36900-2-c9985f66", 12, 0],
    ["1175-03505-36600-2-126dd9ca", 12, 1],
    ["1011-98208-36480-2-9eef750a", 12, 8],
    ["233-75504-36900-2-609151bd", 12, 10],
    ["1182-07205-22440-2-0ad4507d", 12, 9],
    ["1010-98110-23700-2-295bfb4c", 12, 10],
    ["1137-01302-23820-2-d560d49a", 12, 4],
    ["599999", 12, 3],
  ])("puts key %j on partition %i of %i like Kafka's default partitioner", (key, partitions, expected) => {
    expect(partitionForKey(key, partitions as number)).toBe(expected);
  });

  it("hashes the UTF-8 bytes of non-ASCII keys", () => {
    expect(partitionForKey("ü", 1000)).toBe((murmur2(new Uint8Array([0xc3, 0xbc])) & 0x7fffffff) % 1000);
  });

  it("takes the same partition for ASCII keys of every length as hashing their bytes, and for keys non-ASCII anywhere", () => {
    const keys = Array.from({ length: 12 }, (_, n) => "customer-42x".slice(0, n));
    for (const key of [...keys]) for (let at = 0; at < key.length; at++) keys.push(`${key.slice(0, at)}é${key.slice(at + 1)}`);
    for (const key of keys) expect(partitionForKey(key, 1000), key).toBe((murmur2(bytes(key)) & 0x7fffffff) % 1000);
  });

  it("rejects a non-positive partition count", () => {
    expect(() => partitionForKey("k", 0)).toThrow(RangeError);
  });
});
