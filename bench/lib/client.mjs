/**
 * The bench's HTTP client: `node:http` over kept-alive connections. Node 20's `fetch` (undici)
 * cost 1–2 ms more per request here than `http.request` on the same connection (measured against
 * `GET /healthz` of wrangler dev: 3.3–4.6 ms vs 2.1–2.5 ms p50), on the cores workerd shares: a
 * latency scenario would measure the client as much as the app.
 */
import http from "node:http";

const agent = new http.Agent({ keepAlive: true });

/** One request: `{ status, text }`. */
export function request(url, { method = "GET", headers = {}, body } = {}) {
  return new Promise((resolve, reject) => {
    const req = http.request(
      url,
      { method, headers: body === undefined ? headers : { ...headers, "Content-Length": Buffer.byteLength(body) }, agent },
      (res) => {
        const chunks = [];
        res.on("data", (chunk) => chunks.push(chunk));
        res.on("end", () => resolve({ status: res.statusCode, text: Buffer.concat(chunks).toString("utf8") }));
        res.on("error", reject);
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}

/** Calls one bench route of the Worker and returns its JSON answer plus the wall time seen from Node. */
export async function post(baseUrl, path, params) {
  const query = new URLSearchParams(Object.entries(params).map(([k, v]) => [k, String(v)]));
  const started = performance.now();
  const { status, text } = await request(`${baseUrl}${path}?${query}`, { method: "POST" });
  const wallMs = performance.now() - started;
  let body;
  try {
    body = JSON.parse(text);
  } catch {
    throw new Error(`${path}: HTTP ${status}, not JSON: ${text.slice(0, 500)}`);
  }
  if (status < 200 || status > 299 || body.error) throw new Error(`${path}: HTTP ${status}: ${body.error ?? text.slice(0, 500)}`);
  return { ...body, wallMs };
}

/**
 * One JSON request: `{ status, body, ms }` (ms: wall time seen from Node). Throws on anything but
 * the expected statuses (default: 2xx), with the answer's text.
 */
export async function call(baseUrl, method, path, { body, token, expect } = {}) {
  const headers = {};
  if (token) headers.Authorization = `Bearer ${token}`;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const started = performance.now();
  const { status, text } = await request(`${baseUrl}${path}`, {
    method,
    headers,
    body: typeof body === "string" || body === undefined ? body : JSON.stringify(body),
  });
  const ms = performance.now() - started;
  const ok = expect ? expect.includes(status) : status >= 200 && status <= 299;
  if (!ok) throw new Error(`${method} ${path}: HTTP ${status}: ${text.slice(0, 500)}`);
  let parsed;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    throw new Error(`${method} ${path}: HTTP ${status}, not JSON: ${text.slice(0, 500)}`);
  }
  return { status, body: parsed, ms };
}
