/**
 * One store kept as pages of sorted key ranges (src/task/store-page.ts), each page one row: what
 * the store holds in storage, read through memory. It knows every page's first key (the
 * directory, read once: a row per page, a small fraction of the store) and keeps a bounded cache
 * of decoded pages (`StoreCacheLimits`), so a store bigger than memory reads its pages on demand.
 *
 * Page i holds the keys from its first key up to the next page's; the lowest page also holds every
 * key below its own first one, so a page that empties is dropped without rewriting a neighbour.
 * `apply` rewrites each page it touched once: rows written = pages touched, not keys. It must run
 * inside the caller's storage transaction (the task's commit, or a restore batch's), which makes
 * the rewrite of every page, its splits and drops atomic: a crash leaves all of them or none.
 * What is in memory may be ahead of storage after a rollback; the owner calls `forget()` then.
 */
import type { TimestampedKeyValue, ValueAndTimestamp } from "../streams/state/key-value-store";
import { compareKeys } from "../streams/state/key-value-store";
import { decodePage, emptyPage, encodeWithinRows, indexOf, isOversized, lowerBound, mergeIntoPage, type Page, splitPage } from "./store-page";

/** Where pages are kept: one row per (store, page id), with the page's first key. */
export interface PageRows {
  /** Every page of the store: id and first key, in any order. */
  directory(store: string): { page: number; first: string }[];
  /** A page's encoded entries, or undefined when it has no row. */
  read(store: string, page: number): string | undefined;
  write(store: string, page: number, first: string, entries: string): void;
  delete(store: string, page: number): void;
}

/** Bounds of each store's cache: entries, and UTF-16 code units of keys and values together. */
export interface StoreCacheLimits {
  readonly maxEntries: number;
  readonly maxChars: number;
}

/** A write to apply: a value with its timestamp, or null for a delete. */
export interface StoreWrite {
  readonly key: string;
  readonly value: string | null;
  readonly timestamp?: number;
}

interface Directory {
  /** First keys in `compareKeys` order, and the page id of each. */
  readonly firsts: string[];
  readonly ids: number[];
  nextId: number;
}

export class PagedStore {
  private directory: Directory | null = null;
  /** Decoded pages by id, least recently used first, as storage holds them. */
  private readonly cache = new Map<number, Page>();
  private cachedEntries = 0;
  private cachedChars = 0;

  constructor(
    private readonly rows: PageRows,
    readonly store: string,
    private readonly limits: StoreCacheLimits,
  ) {}

  get(key: string): ValueAndTimestamp<string> | undefined {
    const dir = this.dir();
    if (dir.ids.length === 0) return undefined;
    const page = this.page(dir.ids[this.locate(key)]!);
    const at = indexOf(page, key);
    return at < 0 ? undefined : { value: page.values[at]!, timestamp: page.timestamps[at]! };
  }

  /** Entries from `lower` to `upper` (included or not) in key order, at most `limit` (-1: all). */
  range(lower: string, upper: string, end: "included" | "excluded", limit: number): TimestampedKeyValue<string, string>[] {
    const out: TimestampedKeyValue<string, string>[] = [];
    const dir = this.dir();
    const beyond = (key: string) => (end === "included" ? compareKeys(key, upper) > 0 : compareKeys(key, upper) >= 0);
    if (limit === 0 || beyond(lower)) return out;
    const start = dir.ids.length === 0 ? 0 : this.locate(lower);
    for (let i = start; i < dir.ids.length; i++) {
      // A later page holds nothing below its first key: past the upper bound, nothing there is asked for.
      if (i > start && beyond(dir.firsts[i]!)) break;
      const page = this.page(dir.ids[i]!);
      for (let at = lowerBound(page.keys, lower); at < page.keys.length; at++) {
        const key = page.keys[at]!;
        if (beyond(key)) return out;
        out.push({ key, value: page.values[at]!, timestamp: page.timestamps[at]! });
        if (out.length === limit) return out;
      }
    }
    return out;
  }

  /**
   * Applies writes in order (a later one for a key wins; null deletes), then writes each page
   * touched once: split when oversized, dropped when empty. Call inside the storage transaction
   * that commits them (see the file's comment). Returns the rows written.
   */
  apply(writes: Iterable<StoreWrite>): number {
    const dir = this.dir();
    // Each key's last write, by the page that holds it (the directory stays as it is meanwhile).
    const byPage = new Map<number, Map<string, StoreWrite>>();
    let created: number | undefined;
    for (const write of writes) {
      if (dir.ids.length === 0) {
        if (write.value === null) continue;
        created = dir.nextId++;
        dir.firsts.push(write.key);
        dir.ids.push(created);
      }
      const id = dir.ids[this.locate(write.key)]!;
      const group = byPage.get(id);
      if (group) group.set(write.key, write);
      else byPage.set(id, new Map([[write.key, write]]));
    }
    let written = 0;
    for (const [id, group] of byPage) {
      const merged = mergeIntoPage(id === created ? emptyPage() : this.page(id), [...group.values()]);
      // Deletes of absent keys only: the page stays as it is, no row written.
      if (merged) written += this.writePage(dir, id, merged);
    }
    return written;
  }

  /** Drops what is in memory: storage may hold something else now (a rollback, a wipe). */
  forget(): void {
    this.directory = null;
    this.cache.clear();
    this.cachedEntries = 0;
    this.cachedChars = 0;
  }

  /** Pages known, and pages cached (for tests). */
  stats(): { pages: number; cachedPages: number } {
    return { pages: this.dir().ids.length, cachedPages: this.cache.size };
  }

  private writePage(dir: Directory, id: number, page: Page): number {
    const index = dir.ids.indexOf(id);
    this.uncache(id);
    if (page.keys.length === 0) {
      this.rows.delete(this.store, id);
      dir.ids.splice(index, 1);
      dir.firsts.splice(index, 1);
      return 1;
    }
    const pieces = (isOversized(page) ? splitPage(page) : [page]).flatMap(encodeWithinRows);
    let written = 0;
    pieces.forEach(({ page: piece, text }, n) => {
      // The first piece keeps the page's id and first key (its range starts where the page's did),
      // but the lowest page, which holds keys below its first one, takes its lowest key: the
      // pieces after it must start above it.
      const pieceId = n === 0 ? id : dir.nextId++;
      const first = n > 0 || index === 0 ? piece.keys[0]! : dir.firsts[index]!;
      if (n === 0) dir.firsts[index] = first;
      else {
        dir.ids.splice(index + n, 0, pieceId);
        dir.firsts.splice(index + n, 0, first);
      }
      this.rows.write(this.store, pieceId, first, text);
      this.remember(pieceId, piece);
      written++;
    });
    return written;
  }

  /** The index of the page that holds `key` (the directory is not empty). */
  private locate(key: string): number {
    const { firsts } = this.dir();
    // The last page whose first key is at or before `key`; the lowest holds everything below.
    let low = 0;
    let high = firsts.length;
    while (low < high) {
      const mid = (low + high) >>> 1;
      if (compareKeys(firsts[mid]!, key) <= 0) low = mid + 1;
      else high = mid;
    }
    return Math.max(0, low - 1);
  }

  private dir(): Directory {
    if (this.directory) return this.directory;
    const pages = this.rows.directory(this.store).sort((a, b) => compareKeys(a.first, b.first));
    this.directory = {
      firsts: pages.map((p) => p.first),
      ids: pages.map((p) => p.page),
      nextId: pages.reduce((max, p) => Math.max(max, p.page), 0) + 1,
    };
    return this.directory;
  }

  private page(id: number): Page {
    const hit = this.cache.get(id);
    if (hit) {
      this.cache.delete(id);
      this.cache.set(id, hit);
      return hit;
    }
    const text = this.rows.read(this.store, id);
    const page = text === undefined ? emptyPage() : decodePage(text);
    this.remember(id, page);
    return page;
  }

  private remember(id: number, page: Page): void {
    this.uncache(id);
    // A page too big for a fair share of the cache is read from storage each time.
    if (page.keys.length > this.limits.maxEntries / 2 || page.chars > this.limits.maxChars / 4) return;
    this.cache.set(id, page);
    this.cachedEntries += page.keys.length;
    this.cachedChars += page.chars;
    while (this.cachedEntries > this.limits.maxEntries || this.cachedChars > this.limits.maxChars) {
      const oldest = this.cache.keys().next().value as number;
      this.uncache(oldest);
    }
  }

  private uncache(id: number): void {
    const page = this.cache.get(id);
    if (!page) return;
    this.cache.delete(id);
    this.cachedEntries -= page.keys.length;
    this.cachedChars -= page.chars;
  }
}
