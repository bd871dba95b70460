/**
 * Cloudflare's published Durable Objects prices (Workers Paid plan, above the monthly allowance the
 * plan includes), in one place, with where and when they were read, and what the bench's counts
 * cost at them. The allowance (1 million requests, 400,000 GB-s, 50 million rows written, 25
 * billion rows read, 5 GB-month) and the plan's $5 monthly minimum are left out: the bench prices
 * the marginal order.
 */

export const PRICES = Object.freeze({
  source: "https://developers.cloudflare.com/durable-objects/platform/pricing/",
  /** The day the page was read (its source as cloudflare/cloudflare-docs keeps it: src/content/partials/durable-objects/durable-objects-pricing.mdx). */
  readOn: "2026-12-04",
  /** Requests: RPC sessions (every method call on a stub), HTTP requests and alarm invocations. */
  requestsPerMillionUsd: 0.15,
  /** Duration, for the 128 MB every active object is billed for. */
  durationPerMillionGbSecondsUsd: 12.5,
  objectMemoryGb: 0.128,
  /** SQLite rows written (each index a row more; setAlarm and KV puts and deletes a row each). */
  rowsWrittenPerMillionUsd: 1.0,
  rowsReadPerMillionUsd: 0.001,
  /** SQL stored data (the page says GB; taken as 10^9 bytes). */
  storedGbMonthUsd: 0.2,
});

/**
 * Dollars per million records from counts per record: each count per record is that many million
 * units per million records. Duration is not a count and is left out (see docs/scale.md: cents).
 */
export function costPerMillionUsd({ rowsWritten, rowsRead, requests }) {
  return rowsWritten * PRICES.rowsWrittenPerMillionUsd + rowsRead * PRICES.rowsReadPerMillionUsd + requests * PRICES.requestsPerMillionUsd;
}

/** Dollars per month to keep a million records that take `bytesPerRecord` each. */
export function storedUsdPerMillionPerMonth(bytesPerRecord) {
  return ((bytesPerRecord * 1e6) / 1e9) * PRICES.storedGbMonthUsd;
}
