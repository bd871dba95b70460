/**
 * What crosses the two internal topics of a foreign-key join (KIP-213), and how: a subscription
 * (left row → the right table's partition of its foreign key) and a response (right row → the left
 * row's partition). A subscription carries a hash of the left row's value as it was when it was
 * sent; its response carries the hash back, and the left side drops a response whose hash no
 * longer matches its row (an older subscription's answer arriving after a newer one: Kafka's
 * out-of-order check).
 */
import { DeserializationError } from "../../errors";
import { murmur2 } from "../../../log/partitioner";
import type { Serde } from "../../serdes";

/** What the right side does with a subscription (Kafka's `SubscriptionWrapper.Instruction`). */
export type Instruction =
  /** Unsubscribe, and answer null: the left row is gone. */
  | "DELETE_KEY_AND_PROPAGATE"
  /** Unsubscribe quietly: the left row moved to another foreign key, which answers. */
  | "DELETE_KEY_NO_PROPAGATE"
  /** Subscribe and answer, null when the right row is absent (the left row's result must be unset). */
  | "PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE"
  /** Subscribe, and answer only when the right row exists (a new left row of an inner join). */
  | "PROPAGATE_ONLY_IF_FK_VAL_AVAILABLE";

export interface Subscription<K> {
  /** The hash of the left row's new value when sent; null for a deleted row. */
  readonly hash: string | null;
  readonly instruction: Instruction;
  readonly primaryKey: K;
  /** The partition of the left task that sent it: where the response goes. */
  readonly primaryPartition: number;
}

export interface Response<VO> {
  readonly hash: string | null;
  /** The right row; null when absent or deleted. */
  readonly foreignValue: VO | null;
  readonly primaryPartition: number;
}

const encoder = new TextEncoder();

/** A 64-bit hash of a serialized value (two murmur2 rounds of different inputs), as hex. */
export function valueHash(serialized: string): string {
  const bytes = encoder.encode(serialized);
  const salted = encoder.encode(`\u0001${serialized}`);
  const hex = (n: number) => (n >>> 0).toString(16).padStart(8, "0");
  return `${hex(murmur2(bytes))}${hex(murmur2(salted))}`;
}

function parse(text: string, what: string): Record<string, unknown> {
  try {
    const parsed: unknown = JSON.parse(text);
    if (typeof parsed === "object" && parsed !== null) return parsed as Record<string, unknown>;
  } catch {
    // reported below
  }
  throw new DeserializationError(`not a foreign-key join ${what}: ${text.slice(0, 64)}`);
}

export function subscriptionSerde<K>(primaryKeySerde: Serde<K>): Serde<Subscription<K>> {
  return {
    serialize: (s) => JSON.stringify({ h: s.hash, i: s.instruction, k: primaryKeySerde.serialize(s.primaryKey), p: s.primaryPartition }),
    deserialize: (text) => {
      const { h, i, k, p } = parse(text, "subscription");
      return {
        hash: (h as string | null) ?? null,
        instruction: i as Instruction,
        primaryKey: primaryKeySerde.deserialize(k as string),
        primaryPartition: p as number,
      };
    },
  };
}

export function responseSerde<VO>(foreignValueSerde: Serde<VO>): Serde<Response<VO>> {
  return {
    serialize: (r) => JSON.stringify({ h: r.hash, v: r.foreignValue === null ? null : foreignValueSerde.serialize(r.foreignValue), p: r.primaryPartition }),
    deserialize: (text) => {
      const { h, v, p } = parse(text, "response");
      return {
        hash: (h as string | null) ?? null,
        foreignValue: v === null ? null : foreignValueSerde.deserialize(v as string),
        primaryPartition: p as number,
      };
    },
  };
}
