/**
 * A page of a store: the entries of one sorted key range, kept in one SQLite row (`kv_pages`), so
 * that a commit writes a row per page it touched rather than per key (Cloudflare bills a row the
 * same whatever its size). Pure: encoding, search, edits and splits; where pages live and which
 * page holds a key is `PagedStore`'s (src/task/paged-store.ts).
 *
 * Keys sort by `compareKeys` (code points, the order of their UTF-8 bytes). A page is encoded as
 * JSON, `[keys, values, timestamps]`, which keeps every string exactly as it was (a lone surrogate
 * too, as an escape), unlike a TEXT column.
 */
import { MAX_ROW_BYTES } from "../log/stored-batch";
import { compareKeys, NO_TIMESTAMP } from "../streams/state/key-value-store";

/**
 * A page is split when its entries take more than this many UTF-16 units (about as many bytes of
 * JSON for ASCII): rewriting a page costs a JSON encoding of it, so pages stay small enough that
 * a commit touching one key of a page pays little, and big enough to hold hundreds of small
 * entries. Measured (Node, 200,000 keys restored in batches of 10,000, then commits of 1,000
 * scattered keys): 8 K — 3,682 rows restoring, 55 ms a commit; 16 K — 1,782, 95 ms; 32 K — 922, 105 ms. Splits leave halves, so a page is rewritten many times between splits.
 */
export const PAGE_MAX_CHARS = 16 * 1024;
/** At most this many entries per page (each search and insertion is in the page's arrays). */
export const PAGE_MAX_ENTRIES = 1024;
/** Room left in a row for its other columns. */
const ROW_MARGIN = 4 * 1024;
/** The most UTF-8 bytes one entry may take: alone in its page, the page must fit in a row. */
export const MAX_ENTRY_BYTES = MAX_ROW_BYTES - ROW_MARGIN;
/** What an entry costs in a page's size besides its key and value (quotes, commas, its timestamp). */
const ENTRY_OVERHEAD = 24;

/** The entries of one key range, in key order (three arrays of one length). */
export interface Page {
  readonly keys: string[];
  readonly values: string[];
  readonly timestamps: number[];
  /** Size by `entryChars`, summed. */
  chars: number;
}

export function emptyPage(): Page {
  return { keys: [], values: [], timestamps: [], chars: 0 };
}

export function entryChars(key: string, value: string): number {
  return key.length + value.length + ENTRY_OVERHEAD;
}

export function encodePage(page: Page): string {
  return JSON.stringify([page.keys, page.values, page.timestamps]);
}

export function decodePage(text: string): Page {
  const [keys, values, timestamps] = JSON.parse(text) as [string[], string[], number[]];
  let chars = 0;
  for (let i = 0; i < keys.length; i++) chars += entryChars(keys[i]!, values[i]!);
  return { keys, values, timestamps, chars };
}

/** The index of the first key of the page at or after `key` (its length when none). */
export function lowerBound(keys: readonly string[], key: string): number {
  let low = 0;
  let high = keys.length;
  while (low < high) {
    const mid = (low + high) >>> 1;
    if (compareKeys(keys[mid]!, key) < 0) low = mid + 1;
    else high = mid;
  }
  return low;
}

/** The index of `key` in the page, or -1. */
export function indexOf(page: Page, key: string): number {
  const at = lowerBound(page.keys, key);
  return at < page.keys.length && page.keys[at] === key ? at : -1;
}

/** Puts (a value) or deletes (null) a key in the page, in place. */
export function applyToPage(page: Page, key: string, value: string | null, timestamp: number): void {
  const at = lowerBound(page.keys, key);
  const present = at < page.keys.length && page.keys[at] === key;
  if (value === null) {
    if (!present) return;
    page.chars -= entryChars(key, page.values[at]!);
    page.keys.splice(at, 1);
    page.values.splice(at, 1);
    page.timestamps.splice(at, 1);
    return;
  }
  if (present) {
    page.chars += value.length - page.values[at]!.length;
    page.values[at] = value;
    page.timestamps[at] = timestamp;
    return;
  }
  page.keys.splice(at, 0, key);
  page.values.splice(at, 0, value);
  page.timestamps.splice(at, 0, timestamp);
  page.chars += entryChars(key, value);
}

/**
 * The page with writes laid over it (a value puts, null deletes; one write per key), as a new page
 * (the one given is left as it is, since a cache may hold it); undefined when nothing changes. One
 * pass over the page and the sorted writes, however many there are (a restore batch may bring
 * thousands to one page).
 */
export function mergeIntoPage(
  page: Page,
  writes: readonly { readonly key: string; readonly value: string | null; readonly timestamp?: number }[],
): Page | undefined {
  // Keys without a unit from U+D800 up (no surrogate, nothing above one) order by code unit as by
  // code point: then the engine's own string comparison sorts and merges them, not `compareKeys`.
  const compare = allBelowSurrogates(page.keys) && writes.every((w) => BELOW_SURROGATES.test(w.key)) ? compareUnits : compareKeys;
  const sorted = [...writes].sort((a, b) => compare(a.key, b.key));
  const out = emptyPage();
  const keep = (i: number) => {
    out.keys.push(page.keys[i]!);
    out.values.push(page.values[i]!);
    out.timestamps.push(page.timestamps[i]!);
    out.chars += entryChars(page.keys[i]!, page.values[i]!);
  };
  let changed = false;
  let i = 0;
  for (const write of sorted) {
    while (i < page.keys.length && compare(page.keys[i]!, write.key) < 0) keep(i++);
    const present = i < page.keys.length && page.keys[i] === write.key;
    if (present) i++;
    if (write.value === null) {
      changed ||= present;
      continue;
    }
    out.keys.push(write.key);
    out.values.push(write.value);
    out.timestamps.push(write.timestamp ?? NO_TIMESTAMP);
    out.chars += entryChars(write.key, write.value);
    changed = true;
  }
  if (!changed) return undefined;
  while (i < page.keys.length) keep(i++);
  return out;
}

const BELOW_SURROGATES = /^[\u0000-\ud7ff]*$/;

function allBelowSurrogates(keys: readonly string[]): boolean {
  for (let i = 0; i < keys.length; i++) if (!BELOW_SURROGATES.test(keys[i]!)) return false;
  return true;
}

/** Code unit order (the engine's), the same as `compareKeys`' for keys below the surrogates. */
function compareUnits(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

export function isOversized(page: Page): boolean {
  return page.keys.length > 1 && (page.chars > PAGE_MAX_CHARS || page.keys.length > PAGE_MAX_ENTRIES);
}

/**
 * Cuts an oversized page into pieces of about half the bound each (in key order; an entry bigger
 * than that is a piece of its own), so that each piece takes many writes before it splits again.
 */
export function splitPage(page: Page): Page[] {
  const pieces = Math.max(Math.ceil(page.chars / (PAGE_MAX_CHARS / 2)), Math.ceil(page.keys.length / (PAGE_MAX_ENTRIES / 2)));
  const targetChars = page.chars / pieces;
  const targetEntries = page.keys.length / pieces;
  const out: Page[] = [];
  let current = emptyPage();
  for (let i = 0; i < page.keys.length; i++) {
    const size = entryChars(page.keys[i]!, page.values[i]!);
    if (current.keys.length > 0 && (current.chars + size > targetChars * 1.01 || current.keys.length >= Math.ceil(targetEntries))) {
      out.push(current);
      current = emptyPage();
    }
    current.keys.push(page.keys[i]!);
    current.values.push(page.values[i]!);
    current.timestamps.push(page.timestamps[i]!);
    current.chars += size;
  }
  if (current.keys.length > 0) out.push(current);
  return out;
}

/** UTF-8 bytes of a string (a lone surrogate, as JSON escapes it, takes 6). */
export function utf8Bytes(text: string): number {
  let bytes = 0;
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    if (unit < 0x80) bytes += 1;
    else if (unit < 0x800) bytes += 2;
    else if (unit >= 0xd800 && unit <= 0xdbff && i + 1 < text.length && (text.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      bytes += 4;
      i++;
    } else bytes += unit >= 0xd800 && unit <= 0xdfff ? 6 : 3;
  }
  return bytes;
}

/** Whether an entry fits in a row of its own (checked exactly only when it might not). */
export function entryFitsInRow(key: string, value: string): boolean {
  const units = key.length + value.length;
  // JSON escapes take at most 6 bytes for a UTF-16 unit.
  if (units * 6 + ENTRY_OVERHEAD <= MAX_ENTRY_BYTES) return true;
  return utf8Bytes(JSON.stringify(key)) + utf8Bytes(JSON.stringify(value)) + ENTRY_OVERHEAD <= MAX_ENTRY_BYTES;
}

/**
 * Encodes a page as rows of at most MAX_ROW_BYTES: one row, unless escapes or wide characters
 * made it bigger than its size said, then pieces of it (by halves). An entry that fits no row
 * must have been refused when it was put (`entryFitsInRow`).
 */
export function encodeWithinRows(page: Page): { page: Page; text: string }[] {
  const text = encodePage(page);
  if (text.length * 3 + ROW_MARGIN <= MAX_ROW_BYTES || page.keys.length <= 1 || utf8Bytes(text) + ROW_MARGIN <= MAX_ROW_BYTES) return [{ page, text }];
  const half = page.keys.length >>> 1;
  const part = (from: number, to: number): Page => {
    const keys = page.keys.slice(from, to);
    const values = page.values.slice(from, to);
    let chars = 0;
    for (let i = 0; i < keys.length; i++) chars += entryChars(keys[i]!, values[i]!);
    return { keys, values, timestamps: page.timestamps.slice(from, to), chars };
  };
  return [...encodeWithinRows(part(0, half)), ...encodeWithinRows(part(half, page.keys.length))];
}
