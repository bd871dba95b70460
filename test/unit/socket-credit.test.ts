/**
 * A subscription socket's flow control (src/subscriptions/socket-credit.ts) and the windows a
 * windows subscription names (src/subscriptions/window-keys.ts): pure parts, in Node.
 */
import { describe, expect, it } from "vitest";
import { encodeTime } from "../../src/streams/state/key-codec";
import { SocketCredit } from "../../src/subscriptions/socket-credit";
import { windowOfRow, windowRowsPrefix } from "../../src/subscriptions/window-keys";

describe("a socket's credit", () => {
  it("lets a window of messages out, then waits for an acknowledgement", async () => {
    const credit = new SocketCredit(2, 10_000);
    for (let i = 0; i < 2; i++) {
      expect(await credit.waitForRoom()).toBe("room");
      credit.sending();
    }
    const waiting = credit.waitForRoom();
    expect(credit.ack(1)).toBe(true);
    expect(await waiting).toBe("room");
    // An older count is ignored; one past what was sent, or not a count, is refused.
    expect(credit.ack(0)).toBe(true);
    expect(credit.acked).toBe(1);
    expect(credit.ack(3)).toBe(false);
    expect(credit.ack("2")).toBe(false);
    expect(credit.ack(1.5)).toBe(false);
  });

  it("says stalled when the window stays full past its bound, and closed once the socket is gone", async () => {
    const credit = new SocketCredit(1, 20);
    credit.sending();
    expect(await credit.waitForRoom()).toBe("stalled");
    const waiting = credit.waitForRoom();
    credit.close();
    expect(await waiting).toBe("closed");
  });
});

describe("a windows subscription's rows", () => {
  it("names a window store's row by start then end, a session store's by end then start", () => {
    const prefix = windowRowsPrefix("eu");
    const row = `${prefix}${encodeTime(60_000)}${encodeTime(120_000)}`;
    expect(windowOfRow(row, prefix.length, "window")).toEqual({ start: 60_000, end: 120_000 });
    expect(windowOfRow(row, prefix.length, "session")).toEqual({ start: 120_000, end: 60_000 });
    // Another key's rows, even one the key is a prefix of, do not share the prefix.
    expect(`${windowRowsPrefix("eu2")}${encodeTime(0)}${encodeTime(1)}`.startsWith(prefix)).toBe(false);
  });
});
