/**
 * What a key's (or a key's windows') subscriber receives for one changelog record: the same data
 * whoever holds the subscription, the Worker's watch (workers/api/routes/watch.ts) or the hub
 * (durable-objects/subscription-hub.ts).
 */
import { keyForAnswer } from "../streams/key-text";
import type { StoreDefinition } from "../streams/topology/topology";
import type { HubView } from "./hub-sockets";
import { windowOfRow, windowRowsPrefix } from "./window-keys";

/** The event data of a change of `key` (serialized) in `store`, its key answered as `answerKey` (a prefix view: of any key with the prefix `key`, answered as itself). */
export function changeData(store: StoreDefinition, view: HubView, key: string, answerKey: unknown): (row: string, value: string | null) => unknown {
  const value = (v: string | null) => (v === null ? null : store.valueSerde.deserialize(v));
  if (view === "key") return (_row, v) => ({ key: answerKey, value: value(v) });
  if (view === "prefix") return (row, v) => ({ key: keyForAnswer(store.keySerde, row), value: value(v) });
  const length = windowRowsPrefix(key).length;
  const kind = store.kind === "session" ? "session" : "window";
  return (row, v) => ({ key: answerKey, window: windowOfRow(row, length, kind), value: value(v) });
}
