/**
 * The tokens the workerd test projects bind (vitest.config.ts reads them from here, in Node), so
 * the config and the tests that call the Worker name one token.
 */
export const TEST_API_TOKEN = "test-token";

/** Each scoped token the workerd tests bind, by role (test/http-roles.test.ts): tests name them from here. */
export const TEST_TOKENS = {
  admin: "test-admin-token",
  produce: "test-produce-token",
  /** The produce secret's second token, as during a rotation. */
  produceNext: "test-produce-token-next",
  read: "test-read-token",
  log: "test-log-token",
} as const;

/** The scoped tokens as the workerd tests' vars; the produce secret holds two, as during a rotation. */
export const TEST_SCOPED_TOKENS = {
  ADMIN_TOKEN: TEST_TOKENS.admin,
  PRODUCE_TOKEN: `${TEST_TOKENS.produce},${TEST_TOKENS.produceNext}`,
  READ_TOKEN: TEST_TOKENS.read,
  LOG_TOKEN: TEST_TOKENS.log,
};
