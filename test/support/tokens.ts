/**
 * The tokens the workerd test projects bind (vitest.config.ts reads them from here, in Node), so
 * the config and the tests that call the Worker name one token.
 */
export const TEST_API_TOKEN = "test-token";

/** The scoped tokens of the workerd tests (test/http-roles.test.ts); the produce secret holds two, as during a rotation. */
export const TEST_SCOPED_TOKENS = {
  ADMIN_TOKEN: "test-admin-token",
  PRODUCE_TOKEN: "test-produce-token,test-produce-token-next",
  READ_TOKEN: "test-read-token",
  LOG_TOKEN: "test-log-token",
};
