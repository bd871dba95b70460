/**
 * A streaming parser of `text/event-stream` (the WHATWG server-sent events format): text goes in
 * as it arrives, in chunks cut anywhere, and whole events come out. Lines end in CRLF, LF or CR;
 * a line starting with `:` is a comment (a keep-alive); an event is dispatched at a blank line,
 * only when it has data (as EventSource does). `id` is remembered across events, as a browser
 * remembers the last event id, so an event without an `id` line keeps the one before.
 */

export interface ServerSentEvent {
  /** The event's type: "message" when it names none. */
  readonly event: string;
  readonly data: string;
  /** The last event id at this event (its own `id` line, or the one before). */
  readonly id: string | undefined;
  /** Whether this event carried an `id` line itself. */
  readonly hasId: boolean;
  /** The `retry` field (reconnection time, ms), when the event set one. */
  readonly retry?: number;
}

export class SseParser {
  private pending = "";
  /** A CR ended the last chunk: an LF starting the next one belongs to it. */
  private afterCr = false;
  private event = "";
  private data: string[] = [];
  private hasData = false;
  private ownId = false;
  private retry: number | undefined;
  private lastId: string | undefined;
  private first = true;

  constructor(lastId?: string) {
    this.lastId = lastId;
  }

  /** The events completed by `chunk`. */
  push(chunk: string): ServerSentEvent[] {
    let text = chunk;
    if (this.first && text.length > 0) {
      // A byte order mark at the very start is not part of the first field.
      if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
      this.first = false;
    }
    if (this.afterCr && text.startsWith("\n")) text = text.slice(1);
    this.afterCr = false;
    const out: ServerSentEvent[] = [];
    let start = 0;
    for (let i = 0; i < text.length; i++) {
      const c = text.charCodeAt(i);
      if (c !== 10 && c !== 13) continue;
      const line = this.pending + text.slice(start, i);
      this.pending = "";
      if (c === 13) {
        if (i + 1 < text.length) {
          if (text.charCodeAt(i + 1) === 10) i++;
        } else this.afterCr = true;
      }
      start = i + 1;
      const event = this.line(line);
      if (event) out.push(event);
    }
    this.pending += text.slice(start);
    return out;
  }

  /** Forgets a partly received event (the connection it came on is gone); the last id stays. */
  reset(): void {
    this.pending = "";
    this.afterCr = false;
    this.first = true;
    this.clearEvent();
  }

  private line(line: string): ServerSentEvent | undefined {
    if (line === "") return this.dispatch();
    if (line.startsWith(":")) return undefined;
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    switch (field) {
      case "event":
        this.event = value;
        break;
      case "data":
        this.data.push(value);
        this.hasData = true;
        break;
      case "id":
        // An id with a NUL is ignored (the standard's rule).
        if (!value.includes("\0")) {
          this.lastId = value;
          this.ownId = true;
        }
        break;
      case "retry":
        if (/^[0-9]+$/.test(value)) this.retry = Number(value);
        break;
    }
    return undefined;
  }

  private dispatch(): ServerSentEvent | undefined {
    const event: ServerSentEvent | undefined = this.hasData
      ? {
          event: this.event || "message",
          data: this.data.join("\n"),
          id: this.lastId === "" ? undefined : this.lastId,
          hasId: this.ownId,
          ...(this.retry !== undefined && { retry: this.retry }),
        }
      : undefined;
    this.clearEvent();
    return event;
  }

  private clearEvent(): void {
    this.event = "";
    this.data = [];
    this.hasData = false;
    this.ownId = false;
    this.retry = undefined;
  }
}
