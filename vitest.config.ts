/**
 * Test projects: `workers` runs the real Worker and Durable Objects inside workerd
 * (@cloudflare/vitest-pool-workers); `standby` is the same with NUM_STANDBYS=1; `node` drives a
 * real `wrangler dev` with real clients.
 */
import { cloudflareTest } from "@cloudflare/vitest-pool-workers";
import { defineConfig } from "vitest/config";

export const TEST_API_TOKEN = "test-token";

function isInjectedCrash(error: unknown): boolean {
  const { message, durableObjectReset } = (error ?? {}) as { message?: unknown; durableObjectReset?: unknown };
  return durableObjectReset === true && typeof message === "string" && message.startsWith("injected crash");
}

/** The Worker in workerd, with test bindings on top of wrangler.toml's. */
function workerd(bindings: Record<string, string> = {}) {
  return cloudflareTest({
    wrangler: { configPath: "./wrangler.toml" },
    miniflare: {
      bindings: {
        API_TOKEN: TEST_API_TOKEN,
        ENVIRONMENT: "test",
        FAULT_INJECTION: "on",
        MAX_BODY_BYTES: "65536",
        // Small restore batches, so restoration takes many batches in tests.
        RESTORE_BATCH_RECORDS: "25",
        // Topics no task reads, for tests of the log and ingest alone.
        TOPICS: "ingest-test=4",
        ...bindings,
      },
    },
  });
}

export default defineConfig({
  test: {
    // Crash tests kill Durable Objects on purpose (`ctx.abort`); workerd reports the reset of the
    // dead object's pending work. Only those expected deaths are ignored.
    onUnhandledError: (error) => !isInjectedCrash(error),
    projects: [
      {
        plugins: [workerd()],
        test: { name: "workers", include: ["test/**/*.test.ts"], exclude: ["test/node/**", "test/standby/**"] },
      },
      {
        plugins: [workerd({ NUM_STANDBYS: "1", ACCEPTABLE_RECOVERY_LAG: "0" })],
        test: { name: "standby", include: ["test/standby/**/*.test.ts"] },
      },
      {
        test: {
          name: "node",
          environment: "node",
          include: ["test/node/**/*.test.ts"],
          testTimeout: 60_000,
          hookTimeout: 120_000,
          fileParallelism: false,
        },
      },
    ],
  },
});
