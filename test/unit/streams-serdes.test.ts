import { describe, expect, it } from "vitest";
import { DeserializationError, Serdes } from "../../src/streams";

describe("Serdes", () => {
  it("string keeps the text as it is", () => {
    const serde = Serdes.string();
    expect(serde.serialize("a b")).toBe("a b");
    expect(serde.deserialize('"quoted"')).toBe('"quoted"');
  });

  it("number round-trips and rejects text that is not a number", () => {
    const serde = Serdes.number();
    expect(serde.serialize(-12.5)).toBe("-12.5");
    expect(serde.deserialize("-12.5")).toBe(-12.5);
    for (const bad of ["", " 1", "abc", "NaN"]) expect(() => serde.deserialize(bad)).toThrow(DeserializationError);
  });

  it("json round-trips values and turns a parse failure into DeserializationError", () => {
    const serde = Serdes.json<{ amount: number }>();
    expect(serde.serialize({ amount: 3 })).toBe('{"amount":3}');
    expect(serde.deserialize('{"amount":3}')).toEqual({ amount: 3 });
    expect(() => serde.deserialize("{oops")).toThrow(DeserializationError);
    expect(() => serde.serialize(undefined as unknown as { amount: number })).toThrow(TypeError);
  });

  it("from() wraps any error of a user deserializer in DeserializationError, keeping the cause", () => {
    const cause = new Error("no upper case");
    const serde = Serdes.from<string>(
      (s) => s,
      (s) => {
        if (s !== s.toLowerCase()) throw cause;
        return s;
      },
    );
    expect(serde.deserialize("ok")).toBe("ok");
    const error = (() => {
      try {
        serde.deserialize("NO");
      } catch (e) {
        return e;
      }
    })();
    expect(error).toBeInstanceOf(DeserializationError);
    expect((error as DeserializationError).cause).toBe(cause);
  });
});
