/**
 * The coordinator cannot answer: while the fault route `POST /admin/coordinator/fail` holds, it
 * answers every call with this error, as an object that cannot be reached would fail. Errors lose
 * their class over RPC, so the HTTP layer (503) and the API's fallbacks recognise it by its message.
 */
const MARK = "CoordinatorUnavailable: ";

export class CoordinatorUnavailable extends Error {
  constructor(message: string) {
    super(`${MARK}${message}`);
  }
}

export function isCoordinatorUnavailable(error: unknown): boolean {
  return error instanceof Error && error.message.startsWith(MARK);
}
