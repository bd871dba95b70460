/**
 * How many subscriptions one watched key may hold at once (docs/subscriptions.md, "Limits"): a
 * key's subscribers each read the same changelog partition, so a crowd on one key multiplies reads
 * of one partition object and takes the slots every other key shares. Past the limit a new
 * subscription of that key is refused (`503` with `Retry-After`); other keys are not affected.
 * Counted where the subscriptions are held — today per isolate, by the Worker path
 * (workers/api/routes/watch.ts) — and kept apart from how they are held, so any holder of
 * subscriptions (a Durable Object holding sockets) can count its own with it. Memory: one entry per
 * key with a subscriber, removed with its last.
 */

/** Subscriptions of one key (a key, a prefix or a key's windows) one holder takes at most. */
export const MAX_WATCHES_PER_KEY = 32;

export class KeySlots {
  private readonly open = new Map<string, number>();

  constructor(readonly limit: number = MAX_WATCHES_PER_KEY) {}

  /** A slot of `key`, as the function that gives it back (idempotent); undefined when the key holds `limit` already. */
  take(key: string): (() => void) | undefined {
    const held = this.open.get(key) ?? 0;
    if (held >= this.limit) return undefined;
    this.open.set(key, held + 1);
    let given = false;
    return () => {
      if (given) return;
      given = true;
      const left = (this.open.get(key) ?? 1) - 1;
      if (left === 0) this.open.delete(key);
      else this.open.set(key, left);
    };
  }

  /** Subscriptions `key` holds now. */
  taken(key: string): number {
    return this.open.get(key) ?? 0;
  }

  /** Keys with a subscriber now. */
  get keys(): number {
    return this.open.size;
  }
}
