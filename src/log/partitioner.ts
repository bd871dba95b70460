/**
 * Kafka's default partitioner for keyed records: `toPositive(murmur2(utf8(key))) % partitions`,
 * so a key lands on the same partition number as with the Java producer and its StringSerializer.
 */

const encoder = new TextEncoder();

/** Kafka's 32-bit murmur2 (seed 0x9747b28c), as a signed 32-bit integer like the Java client's. */
export function murmur2(data: Uint8Array): number {
  const length = data.length;
  const m = 0x5bd1e995;
  const r = 24;
  let h = (0x9747b28c ^ length) | 0;
  const whole = length & ~3;
  for (let i = 0; i < whole; i += 4) {
    let k = (data[i]! & 0xff) | ((data[i + 1]! & 0xff) << 8) | ((data[i + 2]! & 0xff) << 16) | ((data[i + 3]! & 0xff) << 24);
    k = Math.imul(k, m);
    k ^= k >>> r;
    k = Math.imul(k, m);
    h = Math.imul(h, m);
    h ^= k;
  }
  const tail = length % 4;
  if (tail === 3) h ^= (data[whole + 2]! & 0xff) << 16;
  if (tail >= 2) h ^= (data[whole + 1]! & 0xff) << 8;
  if (tail >= 1) {
    h ^= data[whole]! & 0xff;
    h = Math.imul(h, m);
  }
  h ^= h >>> 13;
  h = Math.imul(h, m);
  h ^= h >>> 15;
  return h | 0;
}

/**
 * murmur2 of an ASCII string's bytes (its UTF-16 code units), without encoding it first; undefined
 * when the string is not ASCII.
 */
function murmur2Ascii(key: string): number | undefined {
  const length = key.length;
  const m = 0x5bd1e995;
  let h = (0x9747b28c ^ length) | 0;
  const whole = length & ~3;
  for (let i = 0; i < whole; i += 4) {
    const a = key.charCodeAt(i);
    const b = key.charCodeAt(i + 1);
    const c = key.charCodeAt(i + 2);
    const d = key.charCodeAt(i + 3);
    if ((a | b | c | d) > 0x7f) return undefined;
    let k = a | (b << 8) | (c << 16) | (d << 24);
    k = Math.imul(k, m);
    k ^= k >>> 24;
    k = Math.imul(k, m);
    h = Math.imul(h, m);
    h ^= k;
  }
  const tail = length % 4;
  for (let i = whole; i < length; i++) if (key.charCodeAt(i) > 0x7f) return undefined;
  if (tail === 3) h ^= key.charCodeAt(whole + 2) << 16;
  if (tail >= 2) h ^= key.charCodeAt(whole + 1) << 8;
  if (tail >= 1) {
    h ^= key.charCodeAt(whole);
    h = Math.imul(h, m);
  }
  h ^= h >>> 13;
  h = Math.imul(h, m);
  h ^= h >>> 15;
  return h | 0;
}

/** The partition Kafka's default partitioner picks for a string key. */
export function partitionForKey(key: string, partitions: number): number {
  if (!Number.isInteger(partitions) || partitions < 1) throw new RangeError("partitions must be a positive integer");
  return ((murmur2Ascii(key) ?? murmur2(encoder.encode(key))) & 0x7fffffff) % partitions;
}
