/** Calls the Worker's `/kafka` endpoint as `@upstash/kafka` does: HTTP Basic, JSON bodies. */
import { exports } from "cloudflare:workers";
import { expect } from "vitest";
import type { Message } from "../../src/kafka-rest/dialect";
import { anyClient, TOKEN } from "../support/api";
import { TEST_TOKENS } from "../support/tokens";

export const BASIC = `Basic ${btoa(`edge:${TOKEN}`)}`;
/** The runtime's credential (LOG_TOKEN): what another deployment whose log is this one's `/kafka` sends. */
export const LOG_BASIC = `Basic ${btoa(`edge:${TEST_TOKENS.log}`)}`;

export interface KafkaCall {
  readonly method?: string;
  readonly body?: unknown;
  /** Sent as is instead of JSON-encoding `body`. */
  readonly raw?: string;
  readonly headers?: Record<string, string>;
  /** The Authorization header; null sends none. */
  readonly auth?: string | null;
}

export async function kafka(path: string, call: KafkaCall = {}): Promise<Response> {
  const headers = new Headers(call.headers);
  if (!headers.has("CF-Connecting-IP")) headers.set("CF-Connecting-IP", anyClient());
  if (call.auth !== null) headers.set("Authorization", call.auth ?? BASIC);
  const body = call.raw ?? (call.body === undefined ? undefined : JSON.stringify(call.body));
  if (body !== undefined && !headers.has("Content-Type")) headers.set("Content-Type", "application/json");
  const method = call.method ?? (body === undefined ? "GET" : "POST");
  return exports.default.fetch(new Request(`http://edge.test/kafka${path}`, { method, headers, body }));
}

/** The JSON body of a 200 answer (fails the test with the body otherwise). */
export async function ok<T = any>(response: Response | Promise<Response>): Promise<T> {
  const r = await response;
  const body = (await r.json()) as T;
  expect(r.status, JSON.stringify(body)).toBe(200);
  return body;
}

/** The dialect error body of a failed answer, checking its status. */
export async function failure(response: Response | Promise<Response>, status: number): Promise<{ error: string; status: number; code?: string }> {
  const r = await response;
  const body = (await r.json()) as { error: string; status: number; code?: string };
  expect(r.status, JSON.stringify(body)).toBe(status);
  expect(body.status).toBe(status);
  expect(typeof body.error).toBe("string");
  return body;
}

export async function endOffsets(topic: string, partitions: number): Promise<number[]> {
  const tps = Array.from({ length: partitions }, (_, partition) => ({ topic, partition }));
  const offsets = await ok<{ partition: number; offset: number }[]>(kafka("/offsets/latest", { body: tps }));
  return offsets.map((o) => o.offset);
}

/** What `/kafka/fetch` answers for `count` records of a partition from `offset` (what a tail of it must send). */
export async function fetched(topic: string, partition: number, offset: number, count: number): Promise<Message[]> {
  return (await ok<Message[]>(kafka("/fetch", { body: { topic, partition, offset } }))).slice(0, count);
}
