/**
 * Stores as pages of sorted keys (src/task/store-page.ts, src/task/paged-store.ts), over rows kept
 * in a Map: splits and drops, UTF-8 order with non-ASCII and astral keys, ranges across page
 * boundaries, prefixes, and a seeded random run against a plain sorted map — with the rows
 * written counted (one per page touched, not per key).
 */
import { describe, expect, it } from "vitest";
import { compareKeys } from "../../src/streams/state/key-value-store";
import { type PageRows, PagedStore, type StoreWrite } from "../../src/task/paged-store";
import {
  applyToPage,
  decodePage,
  emptyPage,
  encodePage,
  encodeWithinRows,
  entryFitsInRow,
  isOversized,
  PAGE_MAX_CHARS,
  splitPage,
  utf8Bytes,
} from "../../src/task/store-page";
import { MAX_ROW_BYTES } from "../../src/log/stored-batch";

/** Rows in a Map, with writes and deletes counted. */
class MapRows implements PageRows {
  readonly rows = new Map<string, { first: string; entries: string }>();
  written = 0;
  reads = 0;
  directory(store: string) {
    return [...this.rows].filter(([id]) => id.startsWith(`${store}/`)).map(([id, row]) => ({ page: Number(id.slice(store.length + 1)), first: row.first }));
  }
  read(store: string, page: number) {
    this.reads++;
    return this.rows.get(`${store}/${page}`)?.entries;
  }
  write(store: string, page: number, first: string, entries: string) {
    this.written++;
    this.rows.set(`${store}/${page}`, { first, entries });
  }
  delete(store: string, page: number) {
    this.written++;
    this.rows.delete(`${store}/${page}`);
  }
}

const LIMITS = { maxEntries: 100_000, maxChars: 64 << 20 };
const put = (key: string, value: string, timestamp = 1): StoreWrite => ({ key, value, timestamp });
const del = (key: string): StoreWrite => ({ key, value: null });

/** A deterministic generator (mulberry32). */
function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe("compareKeys", () => {
  /** The order it keeps, code point by code point (a lone surrogate as itself). */
  function byCodePoints(a: string, b: string): number {
    const x = Array.from(a, (c) => c.codePointAt(0)!);
    const y = Array.from(b, (c) => c.codePointAt(0)!);
    for (let i = 0; i < Math.min(x.length, y.length); i++) if (x[i] !== y[i]) return x[i]! - y[i]!;
    return x.length - y.length;
  }

  it("orders keys by code point, whatever their units: ASCII, the BMP above the surrogates, pairs, lone surrogates", () => {
    const random = seeded(7);
    const units = ["a", "b", "z", "~", "é", "\u{ffff}", "\ue000", "\u{1f600}", "\u{1f601}", "\ud83d", "\ude00", "\ud800", "\udfff"];
    const key = () => Array.from({ length: Math.floor(random() * 5) }, () => units[Math.floor(random() * units.length)]).join("");
    for (let n = 0; n < 20_000; n++) {
      const a = key();
      const b = random() < 0.3 ? a + key() : key();
      expect(Math.sign(compareKeys(a, b)), `${JSON.stringify(a)} against ${JSON.stringify(b)}`).toBe(Math.sign(byCodePoints(a, b)));
      expect(Math.sign(compareKeys(b, a))).toBe(Math.sign(byCodePoints(b, a)));
    }
  });
});

describe("a page", () => {
  it("keeps its keys in UTF-8 order, astral above the rest of the BMP, and round-trips every string", () => {
    const page = emptyPage();
    const keys = ["b", "a", "\uFFFD", "😀", "é", "\uE000", "", "lone \uD800", "z"];
    keys.forEach((k, i) => {
      applyToPage(page, k, `v${i}\u0007"`, i);
    });
    expect(page.keys).toEqual([...keys].sort(compareKeys));
    // UTF-16 order would put the astral key (a surrogate pair) below U+E000 and U+FFFD.
    expect(page.keys.slice(-3)).toEqual(["\uE000", "\uFFFD", "😀"]);
    const back = decodePage(encodePage(page));
    expect(back).toEqual(page);
    applyToPage(back, "a", null, 0);
    applyToPage(back, "absent", null, 0);
    applyToPage(back, "b", "new", 9);
    expect(back.keys).not.toContain("a");
    expect(back.values[back.keys.indexOf("b")]).toBe("new");
    expect(back.timestamps[back.keys.indexOf("b")]).toBe(9);
    expect(back.chars).toBe(decodePage(encodePage(back)).chars);
  });

  it("splits into ordered pieces of about half the bound, an oversized entry alone", () => {
    const page = emptyPage();
    for (let i = 0; i < 2000; i++) applyToPage(page, `k${String(i).padStart(5, "0")}`, "x".repeat(40), i);
    applyToPage(page, "k01000-big", "y".repeat(3 * PAGE_MAX_CHARS), 0);
    expect(isOversized(page)).toBe(true);
    const pieces = splitPage(page);
    expect(pieces.flatMap((p) => p.keys)).toEqual(page.keys);
    for (const piece of pieces) {
      expect(isOversized(piece)).toBe(false);
      if (piece.keys.includes("k01000-big")) expect(piece.keys).toEqual(["k01000-big"]);
      else expect(piece.chars).toBeGreaterThan(PAGE_MAX_CHARS / 8);
    }
  });

  it("fits rows: entries above the cap are refused, a page whose escapes outgrow a row is cut", () => {
    expect(entryFitsInRow("k", "x".repeat(1000))).toBe(true);
    expect(entryFitsInRow("k", "x".repeat(MAX_ROW_BYTES))).toBe(false);
    expect(entryFitsInRow("k", "é".repeat(MAX_ROW_BYTES / 2))).toBe(false);
    expect(utf8Bytes("aé😀")).toBe(1 + 2 + 4);
    const page = emptyPage();
    // Each value escapes to 6 bytes a character in JSON: three of them take more than a row.
    for (let i = 0; i < 3; i++) applyToPage(page, `c${i}`, "\u0001".repeat(70_000), 0);
    const rows = encodeWithinRows(page);
    expect(rows.length).toBeGreaterThan(1);
    for (const row of rows) expect(utf8Bytes(row.text)).toBeLessThanOrEqual(MAX_ROW_BYTES);
    expect(rows.flatMap((r) => r.page.keys)).toEqual(page.keys);
  });
});

describe("a paged store", () => {
  it("writes one row per page touched, however many keys of it a commit updates", () => {
    const rows = new MapRows();
    const store = new PagedStore(rows, "s", LIMITS);
    expect(store.apply(Array.from({ length: 100 }, (_, i) => put(`key-${i}`, `${i}`)))).toBe(1);
    expect(rows.written).toBe(1);
    // The same 100 keys again, each twice: still one row.
    expect(store.apply(Array.from({ length: 200 }, (_, i) => put(`key-${i % 100}`, `again ${i}`)))).toBe(1);
    // A delete of a key that is not there writes nothing.
    expect(store.apply([del("nothing")])).toBe(0);
    expect(store.get("key-7")).toEqual({ value: "again 107", timestamp: 1 });
  });

  it("splits as it grows, ranges across page boundaries, drops pages that empty", () => {
    const rows = new MapRows();
    const store = new PagedStore(rows, "s", LIMITS);
    const key = (i: number) => `k${String(i).padStart(5, "0")}`;
    for (let i = 0; i < 5000; i += 100) store.apply(Array.from({ length: 100 }, (_, j) => put(key(i + j), "v".repeat(50), i + j)));
    const { pages } = store.stats();
    expect(pages).toBeGreaterThan(5);
    // Rows are pages: every page fits its bound.
    for (const { entries } of rows.rows.values()) expect(isOversized(decodePage(entries))).toBe(false);
    // A range across several pages, inclusive at both ends, with and without a limit.
    const got = store.range(key(123), key(4321), "included", -1);
    expect(got.map((e) => e.key)).toEqual(Array.from({ length: 4321 - 123 + 1 }, (_, i) => key(123 + i)));
    expect(got[0]!.timestamp).toBe(123);
    expect(store.range(key(999), key(4321), "excluded", 3).map((e) => e.key)).toEqual([key(999), key(1000), key(1001)]);
    expect(store.range(key(4321), key(4321), "excluded", -1)).toEqual([]);
    expect(store.range(key(9000), "z", "included", -1)).toEqual([]);
    // Deleting everything but the first and last keys drops every page in between.
    const before = rows.written;
    store.apply(Array.from({ length: 4998 }, (_, i) => del(key(i + 1))));
    expect(rows.written - before).toBe(pages);
    expect(rows.rows.size).toBeLessThanOrEqual(2);
    expect(store.range("", "z", "included", -1).map((e) => e.key)).toEqual([key(0), key(4999)]);
    // A key below every page's first key goes to the lowest page.
    store.apply([del(key(0)), put("a", "below")]);
    expect(store.range("", "z", "included", -1).map((e) => e.key)).toEqual(["a", key(4999)]);
    store.apply([del("a"), del(key(4999))]);
    expect(rows.rows.size).toBe(0);
    expect(store.get("a")).toBeUndefined();
  });

  it("reads pages on demand when the store is bigger than its cache, and after forget()", () => {
    const rows = new MapRows();
    const small = { maxEntries: 2_000, maxChars: 1 << 20 };
    const store = new PagedStore(rows, "s", small);
    const key = (i: number) => `k${String(i).padStart(5, "0")}`;
    for (let i = 0; i < 20_000; i += 1000) store.apply(Array.from({ length: 1000 }, (_, j) => put(key(i + j), `${i + j}`)));
    expect(store.stats().cachedPages).toBeLessThan(store.stats().pages);
    for (let i = 0; i < 20_000; i += 777) expect(store.get(key(i))?.value).toBe(`${i}`);
    expect(store.range("", "~", "included", -1)).toHaveLength(20_000);
    const reads = rows.reads;
    store.forget();
    expect(store.get(key(19_999))?.value).toBe("19999");
    expect(rows.reads).toBe(reads + 1);
    // Other stores over the same rows are apart.
    const other = new PagedStore(rows, "s2", small);
    expect(other.range("", "~", "included", -1)).toEqual([]);
  });

  it("answers as a sorted map does, over seeded random puts, deletes, ranges and prefixes", () => {
    for (const seed of [1, 2, 3, 42]) {
      const random = seeded(seed);
      const pick = <T>(xs: readonly T[]) => xs[Math.floor(random() * xs.length)]!;
      const alphabet = ["a", "b", "é", "😀", "\uFFFD", "\uE000", "~", "\u0000"];
      const word = () => Array.from({ length: 1 + Math.floor(random() * 3) }, () => pick(alphabet)).join("");
      const rows = new MapRows();
      // Small cache bounds, so pages come and go from memory too.
      let store = new PagedStore(rows, "s", { maxEntries: 2_000, maxChars: 200_000 });
      const model = new Map<string, { value: string; timestamp: number }>();
      let ordered: [string, { value: string; timestamp: number }][] = [];
      const sorted = () => ordered;
      for (let round = 0; round < 100; round++) {
        const writes: StoreWrite[] = [];
        for (let n = Math.floor(random() * 80); n > 0; n--) {
          const key = word();
          if (random() < 0.3) {
            writes.push(del(key));
            model.delete(key);
          } else {
            const value = "v".repeat(Math.floor(random() * (random() < 0.05 ? 3000 : 300)));
            writes.push(put(key, value, round));
            model.set(key, { value, timestamp: round });
          }
        }
        store.apply(writes);
        ordered = [...model].sort(([a], [b]) => compareKeys(a, b));
        if (random() < 0.1) store = new PagedStore(rows, "s", { maxEntries: 2_000, maxChars: 200_000 });
        for (let q = 0; q < 5; q++) {
          const [from, to] = [word(), word()].sort(compareKeys) as [string, string];
          const limit = random() < 0.5 ? -1 : Math.floor(random() * 6);
          const end = random() < 0.5 ? "included" : "excluded";
          const expected = sorted()
            .filter(([k]) => compareKeys(k, from) >= 0 && (end === "included" ? compareKeys(k, to) <= 0 : compareKeys(k, to) < 0))
            .slice(0, limit < 0 ? undefined : limit)
            .map(([key, e]) => ({ key, ...e }));
          // (As JSON: a deep comparison of thousands of entries per read would take the test's time.)
          expect(JSON.stringify(store.range(from, to, end, limit))).toBe(JSON.stringify(expected));
          const prefix = pick(alphabet);
          const withPrefix = store.range(prefix, `${prefix}\u{10FFFF}\u{10FFFF}`, "excluded", -1).map((e) => e.key);
          expect(JSON.stringify(withPrefix)).toBe(
            JSON.stringify(
              sorted()
                .map(([k]) => k)
                .filter((k) => k.startsWith(prefix)),
            ),
          );
          const key = word();
          expect(store.get(key)).toEqual(model.get(key));
        }
        // Reverse order is the forward order reversed (a reverse range reads the same pages).
        const reversed = store
          .range("", "\u{10FFFF}", "included", -1)
          .reverse()
          .map((e) => e.key);
        expect(JSON.stringify(reversed)).toBe(
          JSON.stringify(
            sorted()
              .map(([k]) => k)
              .reverse(),
          ),
        );
      }
      for (const { entries } of rows.rows.values()) {
        const page = decodePage(entries);
        expect(page.keys.length).toBeGreaterThan(0);
        expect(isOversized(page)).toBe(false);
      }
    }
  });
});
