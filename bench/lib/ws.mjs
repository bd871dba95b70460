/**
 * A WebSocket client for the bench over `node:http` (RFC 6455, text frames only): Node 20 has no
 * WebSocket without a flag, and the project depends on no WebSocket package. One connection per
 * socket (`agent: false`), as a browser's socket is. Enough for the subscriptions' protocol: text
 * messages in, text messages (acknowledgements) out, ping answered, close seen.
 */
import { randomBytes } from "node:crypto";
import http from "node:http";

/**
 * Opens a socket: resolves `{ status: 101, socket }` once upgraded, or `{ status, text }` for an
 * answer that is not an upgrade (a 503 over a limit). `socket.onMessage(text, at)`, `socket.onClose(code)`,
 * `socket.send(text)`, `socket.close()`.
 */
export function openSocket(url, headers = {}) {
  return new Promise((resolve, reject) => {
    const req = http.request(url, {
      agent: false,
      headers: {
        ...headers,
        Connection: "Upgrade",
        Upgrade: "websocket",
        "Sec-WebSocket-Version": "13",
        "Sec-WebSocket-Key": randomBytes(16).toString("base64"),
      },
    });
    req.on("response", (res) => {
      const chunks = [];
      res.on("data", (c) => chunks.push(c));
      res.on("end", () => resolve({ status: res.statusCode, text: Buffer.concat(chunks).toString("utf8") }));
      res.on("error", reject);
    });
    req.on("upgrade", (res, tcp, head) => resolve({ status: res.statusCode, socket: new Socket(tcp, head) }));
    req.on("error", reject);
    req.end();
  });
}

class Socket {
  constructor(tcp, head) {
    this.tcp = tcp;
    this.buffer = head?.length ? Buffer.from(head) : Buffer.alloc(0);
    this.closed = undefined;
    this.onMessage = () => {};
    this.onClose = () => {};
    tcp.setNoDelay(true);
    tcp.on("data", (chunk) => {
      this.buffer = this.buffer.length ? Buffer.concat([this.buffer, chunk]) : chunk;
      this.#frames();
    });
    const ended = () => this.#closed(this.closed ?? 1006);
    tcp.on("close", ended);
    tcp.on("error", ended);
    // After the opener has set its handlers (it awaits the socket: a microtask).
    if (this.buffer.length) setImmediate(() => this.#frames());
  }

  #closed(code) {
    if (this.closed !== undefined && this.reported) return;
    this.closed = code;
    this.reported = true;
    this.onClose(code);
  }

  #frames() {
    const at = performance.now();
    for (;;) {
      const b = this.buffer;
      if (b.length < 2) return;
      const opcode = b[0] & 0x0f;
      let length = b[1] & 0x7f;
      let offset = 2;
      if (length === 126) {
        if (b.length < 4) return;
        length = b.readUInt16BE(2);
        offset = 4;
      } else if (length === 127) {
        if (b.length < 10) return;
        length = Number(b.readBigUInt64BE(2));
        offset = 10;
      }
      if (b.length < offset + length) return;
      const payload = b.subarray(offset, offset + length);
      this.buffer = b.subarray(offset + length);
      // The server's frames are not fragmented here (workerd sends each message whole).
      if (opcode === 0x1) this.onMessage(payload.toString("utf8"), at);
      else if (opcode === 0x9) this.#write(0xa, payload);
      else if (opcode === 0x8) {
        const code = payload.length >= 2 ? payload.readUInt16BE(0) : 1005;
        this.closed = code;
        this.#write(0x8, payload.subarray(0, 2));
        this.tcp.end();
        this.#closed(code);
        return;
      }
    }
  }

  #write(opcode, payload) {
    if (this.tcp.destroyed) return;
    const mask = randomBytes(4);
    const n = payload.length;
    const header = n < 126 ? Buffer.from([0x80 | opcode, 0x80 | n]) : Buffer.from([0x80 | opcode, 0x80 | 126, n >> 8, n & 0xff]);
    const masked = Buffer.alloc(n);
    for (let i = 0; i < n; i++) masked[i] = payload[i] ^ mask[i & 3];
    this.tcp.write(Buffer.concat([header, mask, masked]));
  }

  send(text) {
    this.#write(0x1, Buffer.from(text, "utf8"));
  }

  close() {
    if (this.closed === undefined) this.#write(0x8, Buffer.from([0x03, 0xe8]));
    this.tcp.end();
    setTimeout(() => this.tcp.destroy(), 1_000).unref();
  }
}
