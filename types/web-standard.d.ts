/**
 * The globals the platform-free core (src/) may use: web standards every JavaScript runtime has
 * (workerd, Node, Deno, browsers). tsconfig.core.json loads this instead of the Workers types, so
 * a Cloudflare type reaching the core fails the type check. Add a global here only if it is a
 * standard every runtime provides; anything of the platform belongs in platform/ or
 * durable-objects/ (docs/design.md, dependency rules).
 */

type TimerHandle = number | { readonly [key: string]: unknown };
declare function setTimeout(callback: (...args: unknown[]) => void, ms?: number): TimerHandle;
declare function clearTimeout(handle: TimerHandle | undefined): void;

declare const console: {
  log(...data: unknown[]): void;
  warn(...data: unknown[]): void;
  error(...data: unknown[]): void;
};

declare class TextEncoder {
  encode(input?: string): Uint8Array<ArrayBuffer>;
}

declare class TextDecoder {
  constructor(label?: string, options?: { fatal?: boolean; ignoreBOM?: boolean });
  decode(input?: ArrayBuffer | ArrayBufferView): string;
}

declare const crypto: {
  getRandomValues<T extends Uint8Array | Uint16Array | Uint32Array>(array: T): T;
  randomUUID(): string;
  /** HMAC signing only (webhook signatures, src/connectors/webhook-signature.ts). */
  readonly subtle: {
    importKey(format: "raw", key: Uint8Array, algorithm: { name: "HMAC"; hash: "SHA-256" }, extractable: false, usages: ["sign"]): Promise<object>;
    sign(algorithm: "HMAC", key: object, data: Uint8Array): Promise<ArrayBuffer>;
  };
};
