/** A stream's event as a WebSocket message (docs/subscriptions.md, *WebSockets*), whoever holds the socket: the Worker or a hub. */
import type { StreamEvent } from "./follow-log";

/** The message an event is sent as: its data is JSON already, sent as the value it stands for. */
export function socketMessage(event: StreamEvent): string {
  return JSON.stringify({ event: event.event ?? "message", data: JSON.parse(event.data), ...(event.id !== undefined && { id: event.id }) });
}
