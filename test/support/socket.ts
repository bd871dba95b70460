/** Reads a subscription's WebSocket as a client does (docs/subscriptions.md), each wait bounded (never a sleep). */

export interface SocketEvent {
  readonly event: string;
  // biome-ignore lint/suspicious/noExplicitAny: a message's data is whatever JSON the event carries, read by tests
  readonly data: any;
  readonly id?: string;
}

export class SocketReader {
  private readonly queue: SocketEvent[] = [];
  private waiter: (() => void) | undefined;
  /** Messages received so far (what an acknowledgement counts). */
  received = 0;
  /** The id of the last event that carried one (what a client sends back as `lastEventId`). */
  lastId: string | undefined;
  /** The close code and reason, once the server closed the socket. */
  closed: { code: number; reason: string } | undefined;

  /** `autoAck`: acknowledge each message as it arrives (a client keeping up). */
  constructor(
    readonly socket: WebSocket,
    private readonly autoAck = true,
  ) {
    socket.accept();
    socket.addEventListener("message", (message) => {
      this.received++;
      this.queue.push(JSON.parse(message.data as string) as SocketEvent);
      if (this.autoAck) this.ack();
      this.waiter?.();
    });
    socket.addEventListener("close", (event) => {
      this.closed = { code: event.code, reason: event.reason };
      this.waiter?.();
    });
  }

  /** Acknowledges every message received so far. */
  ack(): void {
    this.socket.send(JSON.stringify({ ack: this.received }));
  }

  /** The next message that is not a keep-alive; fails after `timeoutMs` without one, or when the socket closed. */
  async next(timeoutMs = 15_000): Promise<SocketEvent> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const message = this.queue.shift();
      if (message !== undefined) {
        if (message.event === "keep-alive") continue;
        if (message.id !== undefined) this.lastId = message.id;
        return message;
      }
      if (this.closed) throw new Error(`the socket closed: ${this.closed.code} ${this.closed.reason}`);
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`no message within ${timeoutMs} ms`);
      let timer: ReturnType<typeof setTimeout> | null = null;
      await new Promise<void>((resolve) => {
        this.waiter = resolve;
        timer = setTimeout(() => resolve(), left);
      });
      if (timer !== null) clearTimeout(timer);
      this.waiter = undefined;
    }
  }

  async take(count: number, timeoutMs?: number): Promise<SocketEvent[]> {
    const events: SocketEvent[] = [];
    while (events.length < count) events.push(await this.next(timeoutMs));
    return events;
  }

  /** Messages waiting to be read. */
  get waiting(): number {
    return this.queue.length;
  }

  close(): void {
    try {
      this.socket.close(1000, "done");
    } catch {
      // Already closed.
    }
  }
}

/** The socket of an upgrade answer; fails with the answer's body when it is not 101. */
export async function socketOf(response: Response, autoAck = true): Promise<SocketReader> {
  if (response.status !== 101 || !response.webSocket) throw new Error(`expected 101 with a WebSocket, got ${response.status}: ${await response.text()}`);
  return new SocketReader(response.webSocket, autoAck);
}
