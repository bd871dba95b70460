/**
 * How a migration ends when it does not complete in the call that asked for it: refused (unknown
 * task or placement), or under way (stored as the goal; an instance has not taken its part yet,
 * and the coordinator's alarm completes it). Errors lose their class over RPC, so the HTTP layer
 * recognises them by their message.
 */

export class MigrationRefused extends Error {
  override name = "MigrationRefused";
}

/** Its message starts with its name (it is its mark across RPC), so the name stays `Error`. */
export class MigrationUnderWay extends Error {
  constructor(message: string) {
    super(`MigrationUnderWay: ${message}`);
  }
}

export function isMigrationUnderWay(error: unknown): boolean {
  return error instanceof Error && error.message.startsWith("MigrationUnderWay: ");
}
