/**
 * Flow control of a subscription over a WebSocket (docs/subscriptions.md). A Worker's WebSocket
 * has no back-pressure: `send` queues without bound and says nothing of what the subscriber read.
 * So the subscriber acknowledges: `{"ack": n}`, the number of messages it has received so far.
 * The stream sends at most `window` messages beyond the last acknowledgement and then waits, not
 * reading the changelog (as a server-sent event stream waits on its response), so a slow
 * subscriber costs at most a window of queued messages and falls behind in the changelog, where
 * `resync` catches it if compaction overtakes it. One that acknowledges nothing for `stallMs` with
 * a full window is closed with `SLOW_SUBSCRIBER`: it reconnects with its last id when it can.
 */

/** Messages in flight (sent, not acknowledged) at most. */
export const SOCKET_WINDOW = 100;
/** How long a full window may wait for an acknowledgement before the socket is closed. */
export const SOCKET_STALL_MS = 30_000;
/** The close code of a socket whose subscriber stopped acknowledging (private range, RFC 6455 7.4.2). */
export const SLOW_SUBSCRIBER = 4008;

export type Room = "room" | "stalled" | "closed";

export class SocketCredit {
  private sentCount = 0;
  private ackedCount = 0;
  private ended = false;
  private wake: (() => void) | undefined;

  constructor(
    readonly window: number = SOCKET_WINDOW,
    readonly stallMs: number = SOCKET_STALL_MS,
  ) {}

  get sent(): number {
    return this.sentCount;
  }

  get acked(): number {
    return this.ackedCount;
  }

  /** Counts a message sent. */
  sending(): void {
    this.sentCount++;
  }

  /**
   * The subscriber received `count` messages in all. An older count is ignored (acknowledgements
   * may cross); false for one that is not a count or exceeds what was sent.
   */
  ack(count: unknown): boolean {
    if (typeof count !== "number" || !Number.isSafeInteger(count) || count < 0 || count > this.sentCount) return false;
    if (count > this.ackedCount) {
      this.ackedCount = count;
      this.wake?.();
    }
    return true;
  }

  /** The socket is gone: a wait ends. */
  close(): void {
    this.ended = true;
    this.wake?.();
  }

  /** Resolves once another message may be sent; `stalled` when the window stayed full for `stallMs`. */
  async waitForRoom(): Promise<Room> {
    const deadline = Date.now() + this.stallMs;
    for (;;) {
      if (this.ended) return "closed";
      if (this.sentCount - this.ackedCount < this.window) return "room";
      const left = deadline - Date.now();
      if (left <= 0) return "stalled";
      let timer: ReturnType<typeof setTimeout> | null = null;
      await new Promise<void>((resolve) => {
        this.wake = resolve;
        timer = setTimeout(() => resolve(), left);
      });
      if (timer !== null) clearTimeout(timer);
      this.wake = undefined;
    }
  }
}
