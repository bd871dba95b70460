/** Calls the Worker under test the way a client would, with or without the test token. */
import { exports } from "cloudflare:workers";

import { TEST_API_TOKEN } from "./tokens";

export const TOKEN = TEST_API_TOKEN;

/**
 * A client address of its own for each call that names none: failed authentication is limited per
 * client (workers/api/auth-failures.ts), and tests that send wrong tokens on purpose are many
 * clients, not one guessing. Tests of the limit name their client.
 */
export function anyClient(): string {
  return `198.51.100.${Math.floor(Math.random() * 250)}-${crypto.randomUUID().slice(0, 8)}`;
}

export interface CallOptions {
  readonly method?: string;
  readonly body?: unknown;
  /** Sent as is (a string) instead of JSON-encoding `body`. */
  readonly rawBody?: string;
  readonly token?: string | null;
  readonly headers?: Record<string, string>;
}

export async function call(path: string, options: CallOptions = {}): Promise<Response> {
  const headers = new Headers(options.headers);
  if (!headers.has("CF-Connecting-IP")) headers.set("CF-Connecting-IP", anyClient());
  const token = options.token === undefined ? TOKEN : options.token;
  if (token !== null) headers.set("Authorization", `Bearer ${token}`);
  let body: string | undefined = options.rawBody;
  if (body === undefined && options.body !== undefined) body = JSON.stringify(options.body);
  if (body !== undefined && !headers.has("Content-Type")) headers.set("Content-Type", "application/json");
  const method = options.method ?? (body === undefined ? "GET" : "POST");
  return exports.default.fetch(new Request(`http://edge.test${path}`, { method, headers, body }));
}

export async function json<T = any>(response: Response): Promise<T> {
  return (await response.json()) as T;
}
