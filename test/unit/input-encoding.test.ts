/**
 * The one encoding of records written from outside (src/streams/topology/input-encoding.ts, used
 * by HTTP ingest, `TestDriver.pipe` and `TopologyTestDriver.pipeInput`), keys written as text
 * (src/streams/key-text.ts), schema serdes and the spelling of error paths: pure, no runtime.
 */
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { encodeIngest, type EncodedRequest } from "../../src/ingest/encode";
import { MAX_INPUT_KEY_BYTES, MAX_INPUT_RECORD_BYTES } from "../../src/log/records";
import { TOMBSTONE_HEADER } from "../../src/log/stored-batch";
import { keyForAnswer, serializedKeyFromText, serializedPrefixFromText } from "../../src/streams/key-text";
import { DeserializationError, Serdes, StreamsBuilder, type Serde } from "../../src/streams";
import { encodeInput, inputSerdes, RefusedRecord, toProducerRecord, type InputSerdes } from "../../src/streams/topology/input-encoding";
import { formatPath } from "../../src/util/path";

const serdes = (key: Serde<unknown>, value: Serde<unknown>): InputSerdes => ({ key, value, readers: [{ key, value }] });
const STRING = serdes(Serdes.string() as Serde<unknown>, Serdes.string() as Serde<unknown>);
const NUMBER = serdes(Serdes.string() as Serde<unknown>, Serdes.number() as Serde<unknown>);
const JSON_ = serdes(Serdes.json(), Serdes.json());

function refusal(run: () => unknown): RefusedRecord {
  try {
    run();
  } catch (error) {
    if (error instanceof RefusedRecord) return error;
    throw error;
  }
  throw new Error("not refused");
}

describe("encodeInput", () => {
  it("writes each value as its topic's serde does: a string as itself, a number as its text, JSON as JSON", () => {
    expect(encodeInput(STRING, "alice", "hello world")).toEqual({ key: "alice", value: "hello world", bytes: 16 });
    expect(encodeInput(NUMBER, "alice", 42.5)).toMatchObject({ key: "alice", value: "42.5" });
    expect(encodeInput(JSON_, "NL", { color: "orange" })).toMatchObject({ key: '"NL"', value: '{"color":"orange"}' });
  });

  it("keeps the plain encoding for a topic no source reads: the key as given, the value as JSON", () => {
    expect(encodeInput(undefined, "k", "text")).toMatchObject({ key: "k", value: '"text"' });
    expect(refusal(() => encodeInput(undefined, 5, 1))).toMatchObject({ refusal: "invalid", field: "key" });
  });

  it("makes a null value a tombstone, and a null key no key", () => {
    const tombstone = encodeInput(STRING, "gone", null);
    expect(tombstone).toEqual({ key: "gone", value: null, bytes: 4 + TOMBSTONE_HEADER.length + 1 });
    expect(toProducerRecord(tombstone, 7)).toEqual({ key: "gone", value: "", headers: [{ key: TOMBSTONE_HEADER, value: "1" }], timestamp: 7 });
    expect(toProducerRecord(encodeInput(STRING, null, "v"))).toEqual({ key: null, value: "v" });
  });

  it("refuses what its serdes cannot write and read back: a throwing or non-text serializer, a failing deserializer", () => {
    expect(refusal(() => encodeInput(NUMBER, "k", "abc"))).toMatchObject({ refusal: "invalid", field: "value", message: 'not a number: "abc"' });
    expect(refusal(() => encodeInput(STRING, "k", 5)).message).toBe("its serializer returned number, not text");
    const throwing = serdes(
      Serdes.string() as Serde<unknown>,
      Serdes.from<unknown>(
        () => {
          throw new Error("no");
        },
        (t) => t,
      ),
    );
    expect(refusal(() => encodeInput(throwing, "k", 1)).message).toBe("cannot be serialized: no");
    expect(refusal(() => encodeInput(NUMBER, 5, 1))).toMatchObject({ field: "key" });
  });

  it("checks with every source's deserializer", () => {
    const strict = Serdes.json(z.object({ id: z.string() })) as Serde<unknown>;
    const both: InputSerdes = {
      key: Serdes.string() as Serde<unknown>,
      value: Serdes.json(),
      readers: [STRING.readers[0]!, { key: Serdes.string() as Serde<unknown>, value: strict }],
    };
    expect(encodeInput(both, "k", { id: "x" }).value).toBe('{"id":"x"}');
    expect(refusal(() => encodeInput(both, "k", { id: 1 })).message).toMatch(/^does not match the schema: id: /);
  });

  it(`takes keys of 1 to ${MAX_INPUT_KEY_BYTES} bytes (UTF-8) and records up to ${MAX_INPUT_RECORD_BYTES} bytes`, () => {
    expect(encodeInput(STRING, "é".repeat(MAX_INPUT_KEY_BYTES / 2), "v").key).toHaveLength(MAX_INPUT_KEY_BYTES / 2);
    expect(refusal(() => encodeInput(STRING, `${"é".repeat(MAX_INPUT_KEY_BYTES / 2)}x`, "v"))).toMatchObject({ refusal: "key", field: "key" });
    expect(refusal(() => encodeInput(STRING, "", "v"))).toMatchObject({ refusal: "key", field: "key" });
    // A key of another type is measured serialized.
    expect(refusal(() => encodeInput(JSON_, ["x".repeat(MAX_INPUT_KEY_BYTES)], "v"))).toMatchObject({ refusal: "key" });
    const fits = "x".repeat(MAX_INPUT_RECORD_BYTES - 1);
    expect(encodeInput(STRING, "k", fits).bytes).toBe(MAX_INPUT_RECORD_BYTES);
    expect(refusal(() => encodeInput(STRING, "k", `${fits}x`))).toMatchObject({ refusal: "too-large", field: undefined });
  });
});

describe("inputSerdes", () => {
  it("is the serdes of the source reading a topic, none for a topic no source reads", () => {
    const builder = new StreamsBuilder();
    builder.stream("notes", { key: Serdes.string(), value: Serdes.string() }).to("out");
    const topology = builder.build({ applicationId: "t", topics: { notes: 1, out: 1 } });
    expect(inputSerdes(topology, "notes")).toMatchObject({ key: Serdes.string(), value: Serdes.string() });
    expect(inputSerdes(topology, "out")).toBeUndefined();
  });
});

describe("encodeIngest", () => {
  it("reads keys as text (a number topic's key 5), and names the first record refused", () => {
    const numberKeys = serdes(Serdes.number() as Serde<unknown>, Serdes.json());
    const encoded = encodeIngest([{ key: "5", value: 1, timestamp: 3 }], numberKeys);
    expect(encoded).toEqual({ ok: true, records: [{ key: "5", value: "1", timestamp: 3 }] });
    const refused = encodeIngest(
      [
        { key: "5", value: 1 },
        { key: "five", value: 1 },
        { key: "", value: 1 },
      ],
      numberKeys,
    );
    expect(refused).toMatchObject({ ok: false, index: 1, refused: { refusal: "invalid", field: "key" } });
  });
});

describe("keys written as text", () => {
  it("stand for the key itself, serialized with the store's key serde; numbers are read from their text", () => {
    expect(serializedKeyFromText(Serdes.string() as Serde<unknown>, "NL")).toBe("NL");
    expect(serializedKeyFromText(Serdes.json(), "NL")).toBe('"NL"');
    expect(serializedKeyFromText(Serdes.number() as Serde<unknown>, "5.0")).toBe("5");
    expect(() => serializedKeyFromText(Serdes.number() as Serde<unknown>, "five")).toThrow(/not a number/);
  });

  it("leave a JSON string open as a prefix, and answer keys deserialized", () => {
    expect(serializedPrefixFromText(Serdes.json(), "N")).toBe('"N');
    expect(serializedPrefixFromText(Serdes.string() as Serde<unknown>, "N")).toBe("N");
    expect(serializedPrefixFromText(Serdes.number() as Serde<unknown>, "1.")).toBe("1.");
    expect(keyForAnswer(Serdes.json(), '"NL"')).toBe("NL");
    expect(keyForAnswer(Serdes.json(), "not json")).toBe("not json");
  });
});

describe("Serdes.json(schema)", () => {
  const Order = z.object({ amount: z.number() });

  it("reads values that match the schema, as its output", () => {
    const serde = Serdes.json(Order);
    expect(serde.serialize({ amount: 3 })).toBe('{"amount":3}');
    expect(serde.deserialize('{"amount":3,"x":1}')).toEqual({ amount: 3 });
  });

  it("refuses values that do not match, naming the place as lines[0].amount", () => {
    const serde = Serdes.json(z.object({ lines: z.array(Order) }));
    expect(() => serde.deserialize('{"lines":[{"amount":"3"}]}')).toThrow(DeserializationError);
    expect(() => serde.deserialize('{"lines":[{"amount":"3"}]}')).toThrow(/^does not match the schema: lines\[0\]\.amount: /);
    expect(() => serde.deserialize("{oops")).toThrow(/invalid JSON/);
  });

  it("refuses an asynchronous schema rather than read a promise", () => {
    const serde = Serdes.json(Order.refine(async () => true));
    expect(() => serde.deserialize('{"amount":1}')).toThrow(/synchronous/);
  });
});

describe("formatPath", () => {
  it("spells indexes in brackets and names after dots", () => {
    expect(formatPath(["records", 0, "key"])).toBe("records[0].key");
    expect(formatPath([{ key: "lines" }, { key: 2 }, "amount"])).toBe("lines[2].amount");
    expect(formatPath([0])).toBe("[0]");
  });
});

describe("a value from an ingest body (as JSON.parse made it)", () => {
  const Order = z.object({ amount: z.number().min(-1e15).max(1e15) });
  /** Refuses -0, which JSON writes as 0: a value its text does not give back must be read back from its text. */
  const NotMinusZero = z.object({ amount: z.number().refine((n) => !Object.is(n, -0), "-0") });
  const bodies = [
    '{"amount":3}',
    '{"amount":3,"extra":{"deep":[1,2,{"x":null}]}}',
    '{"amount":"3"}',
    "{}",
    "[1]",
    '"text"',
    '{"amount":1e400}',
    '{"amount":-1e400}',
    '{"amount":-0}',
    '{"__proto__":{"amount":1},"amount":2}',
    '{"amount":2e15}',
  ];

  /** What ingest makes of each body's value: `encodeIngest`, or `encodeInput` reading the text back. */
  const outcomes = (serde: Serde<unknown>, quick: boolean): EncodedRequest[] =>
    bodies.map((body): EncodedRequest => {
      const value: unknown = JSON.parse(body);
      const both = serdes(Serdes.string() as Serde<unknown>, serde);
      if (quick) return encodeIngest([{ key: "k", value }], both);
      try {
        return { ok: true as const, records: [toProducerRecord(encodeInput(both, "k", value))] };
      } catch (error) {
        if (error instanceof RefusedRecord) return { ok: false as const, index: 0, refused: error };
        throw error;
      }
    });

  it("is encoded and refused exactly as reading its text back would, message for message", () => {
    for (const serde of [Serdes.json(Order), Serdes.json(NotMinusZero), Serdes.json()]) {
      const quick = outcomes(serde, true);
      const slow = outcomes(serde, false);
      expect(quick.map((o) => (o.ok ? o.records : [o.refused.refusal, o.refused.field, o.refused.message]))).toEqual(
        slow.map((o) => (o.ok ? o.records : [o.refused.refusal, o.refused.field, o.refused.message])),
      );
    }
    // -0 is written as 0: the schema that refuses -0 takes it, as a task reading the record would.
    expect(outcomes(Serdes.json(NotMinusZero), true)[bodies.indexOf('{"amount":-0}')]).toMatchObject({ ok: true });
  });

  it("is checked without parsing its text again, unless its text would not give it back", () => {
    const serde = Serdes.json(Order);
    let reads = 0;
    const counted: Serde<unknown> = {
      ...serde,
      deserialize: (text) => {
        reads++;
        return serde.deserialize(text);
      },
    };
    const both = serdes(Serdes.string() as Serde<unknown>, counted);
    expect(encodeIngest([{ key: "k", value: JSON.parse('{"amount":3}') }], both)).toMatchObject({ ok: true });
    expect(encodeIngest([{ key: "k", value: JSON.parse('{"amount":"x"}') }], both)).toMatchObject({ ok: false });
    expect(reads).toBe(0);
    expect(encodeIngest([{ key: "k", value: JSON.parse('{"amount":-0}') }], both)).toMatchObject({ ok: true });
    expect(reads).toBe(1);
    // Two sources reading the topic: each reads the text back, as always.
    const two: InputSerdes = { ...both, readers: [both.readers[0]!, { key: both.key, value: Serdes.json() }] };
    expect(encodeIngest([{ key: "k", value: { amount: 3 } }], two)).toMatchObject({ ok: true });
    expect(reads).toBe(2);
  });
});
