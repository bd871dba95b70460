/**
 * An encoded batch's UTF-8 bytes (`EncodedRecords.bytes`, src/log/record-batch.ts): `encodeBatch`
 * finds them for an ASCII text by the scan it makes anyway, so that the task's book and the ingest
 * gatherer need not scan the text again. They must be the text's exact UTF-8 length whenever they
 * are given (a row's cap is counted with them), on every kind of string.
 */
import { describe, expect, it } from "vitest";
import { memberBytes } from "../../src/ingest/gather";
import { encodeBatch, encodedBytes, joinEncoded } from "../../src/log/record-batch";
import { utf8Length } from "../../src/log/records";
import type { ProducerRecord } from "../../src/log/types";
import { inlineBatch } from "../../src/task/task-book";

const ascii: ProducerRecord[] = [
  { key: "customer-1", value: '{"count":1,"sum":12.5}', timestamp: 5 },
  { key: null, value: "plain", headers: [{ key: "h", value: "v" }] },
];
/** ASCII texts whose strings are not all ASCII, or that JSON escapes (control characters, quotes, a literal "\u"). */
const others: ProducerRecord[][] = [
  [{ key: "clé", value: "é€", headers: [{ key: "h", value: "日本" }] }],
  [{ key: "x", value: "😀 and a lone \ud83d half", timestamp: 9, headers: [{ key: "\udc00", value: "" }] }],
  [{ key: "ctl", value: '\u0001\u001f\t\n"\\', headers: [{ key: "\\u00e9", value: "a\\\\ub" }] }],
];

describe("an encoded batch's bytes", () => {
  it("are known without a second scan for an ASCII batch, and exact", () => {
    const encoded = encodeBatch(ascii)!;
    expect(encoded.bytes).toBe(encoded.text.length);
    expect(encoded.bytes).toBe(utf8Length(encoded.text));
  });

  it("are exact, or left to be counted, for every other kind of string", () => {
    for (const batch of others) {
      const encoded = encodeBatch(batch)!;
      if (encoded.bytes !== undefined) expect(encoded.bytes).toBe(utf8Length(encoded.text));
      expect(encodedBytes(encoded)).toBe(utf8Length(encoded.text));
    }
  });

  it("of two joined batches are those of the joined text", () => {
    const joined = joinEncoded(encodeBatch(ascii)!, encodeBatch([{ key: "k", value: "more" }])!);
    expect(joined.bytes).toBe(utf8Length(joined.text));
    const mixed = joinEncoded(encodeBatch(ascii)!, encodeBatch(others[0]!)!);
    expect(encodedBytes(mixed)).toBe(utf8Length(mixed.text));
  });

  it("are what the book and the gatherer count a batch at", () => {
    for (const batch of [ascii, ...others]) {
      const encoded = encodeBatch(batch)!;
      const fields = { id: 1, commitId: 1, phase: 0, topic: "t", partition: 0, sequence: 0, text: encoded.text };
      expect(inlineBatch(fields, encoded.bytes).bytes).toBe(inlineBatch(fields).bytes);
      const member = { text: encoded.text, measure: encoded.measure! };
      expect(memberBytes({ ...member, bytes: encoded.bytes })).toBe(memberBytes(member));
    }
  });
});
