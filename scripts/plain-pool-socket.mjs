// Preloaded into vitest's process by scripts/test.mjs (node --import), before miniflare loads.
// Vitest sends every module a workerd test file imports (≈ 470 for the Worker) over one WebSocket
// between this process and workerd, and miniflare's client (`ws`) offers per-message deflate, which
// workerd accepts: on localhost each side then compresses what the other inflates, CPU spent for
// nothing, ≈ 0.5 s of this process per workerd file. Miniflare's client sockets here offer no
// compression; the messages are the same. The Workers' own sockets under test are not affected.
import { createRequire } from "node:module";

const fromMiniflare = createRequire(createRequire(import.meta.url).resolve("miniflare"));
const path = fromMiniflare.resolve("ws");
const WebSocket = fromMiniflare("ws");

class UncompressedWebSocket extends WebSocket {
  constructor(address, protocols, options) {
    const withOptions = protocols !== null && typeof protocols === "object" && !Array.isArray(protocols);
    if (withOptions) super(address, { ...protocols, perMessageDeflate: false });
    else super(address, protocols, { ...options, perMessageDeflate: false });
  }
}
fromMiniflare.cache[path].exports = UncompressedWebSocket;
