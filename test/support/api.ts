/** Calls the Worker under test the way a client would, with or without the test token. */
import { exports } from "cloudflare:workers";

export const TOKEN = "test-token";

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
