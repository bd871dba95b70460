/**
 * What a store holds. Every kind lives in the same raw key-value store (and so is change-logged
 * and restored the same way); the kind says how its keys are laid out and which view reads it.
 */
export type StoreKind = "key-value" | "window" | "session" | "buffer";
