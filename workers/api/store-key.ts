/**
 * A key as a query route takes it — text in the path or a scan's bounds — turned into the
 * serialized key the store holds, with the store's key serde (src/streams/key-text.ts).
 */
import { KeyTextError, keyFromText, serializedKeyFromText } from "../../src/streams/key-text";
import type { StoreDefinition } from "../../src/streams/topology/topology";
import { ApiError } from "./http-error";

/** The serialized key a path's key stands for in a store; 400 when the store's key serde cannot write it. */
export function storeKey(store: StoreDefinition, text: string): { key: unknown; serialized: string } {
  try {
    return { key: keyFromText(store.keySerde, text), serialized: serializedKeyFromText(store.keySerde, text) };
  } catch (error) {
    if (!(error instanceof KeyTextError)) throw error;
    throw new ApiError(400, "invalid_input", `key: ${JSON.stringify(text.slice(0, 64))} is not a key of store ${store.name}: ${error.message}`);
  }
}
