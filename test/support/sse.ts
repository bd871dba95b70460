/** Reads a server-sent event stream as a client does, each wait bounded (never a sleep). */

export interface ServerSentEvent {
  /** The event type; "message" when the event names none. */
  readonly event: string;
  readonly data: string;
  /** The event's id, when it carries one. */
  readonly id?: string;
}

/** The events of a `text/event-stream` response body, in order. */
export class EventReader {
  private readonly reader: ReadableStreamDefaultReader<Uint8Array>;
  private readonly decoder = new TextDecoder();
  private buffer = "";
  private readonly queue: ServerSentEvent[] = [];
  /** The id of the last event that carried one (what a client sends back as `Last-Event-ID`). */
  lastId: string | undefined;

  constructor(response: Response) {
    if (!response.body) throw new Error("the response has no body");
    this.reader = response.body.getReader() as ReadableStreamDefaultReader<Uint8Array>;
  }

  /** The next event; fails after `timeoutMs` without one. */
  async next(timeoutMs = 15_000): Promise<ServerSentEvent> {
    const deadline = Date.now() + timeoutMs;
    while (this.queue.length === 0) {
      const left = deadline - Date.now();
      let timer: ReturnType<typeof setTimeout> | undefined;
      const timeout = new Promise<"timeout">((resolve) => (timer = setTimeout(() => resolve("timeout"), Math.max(left, 0))));
      const chunk = await Promise.race([this.reader.read(), timeout]);
      if (timer !== undefined) clearTimeout(timer);
      if (chunk === "timeout") throw new Error(`no event within ${timeoutMs} ms`);
      if (chunk.done) throw new Error("the stream ended");
      this.buffer += this.decoder.decode(chunk.value, { stream: true });
      this.parse();
    }
    const event = this.queue.shift()!;
    if (event.id !== undefined) this.lastId = event.id;
    return event;
  }

  /** The next `count` events. */
  async take(count: number, timeoutMs?: number): Promise<ServerSentEvent[]> {
    const events: ServerSentEvent[] = [];
    while (events.length < count) events.push(await this.next(timeoutMs));
    return events;
  }

  /** Leaves, as a client closing the connection. */
  async close(): Promise<void> {
    await this.reader.cancel().catch(() => undefined);
  }

  private parse(): void {
    for (let end = this.buffer.indexOf("\n\n"); end >= 0; end = this.buffer.indexOf("\n\n")) {
      const block = this.buffer.slice(0, end);
      this.buffer = this.buffer.slice(end + 2);
      let event = "message";
      const data: string[] = [];
      let id: string | undefined;
      for (const line of block.split("\n")) {
        const colon = line.indexOf(":");
        const field = colon < 0 ? line : line.slice(0, colon);
        const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
        if (field === "event") event = value;
        else if (field === "data") data.push(value);
        else if (field === "id") id = value;
      }
      if (data.length > 0 || id !== undefined) this.queue.push({ event, data: data.join("\n"), ...(id !== undefined && { id }) });
    }
  }
}
