/**
 * Two test projects: `workers` runs the real Worker and Durable Objects inside workerd
 * (@cloudflare/vitest-pool-workers); `node` drives a real `wrangler dev` with real clients.
 */
import { cloudflareTest } from "@cloudflare/vitest-pool-workers";
import { defineConfig } from "vitest/config";

export const TEST_API_TOKEN = "test-token";

export default defineConfig({
  test: {
    projects: [
      {
        plugins: [
          cloudflareTest({
            wrangler: { configPath: "./wrangler.toml" },
            miniflare: {
              bindings: { API_TOKEN: TEST_API_TOKEN, ENVIRONMENT: "test", FAULT_INJECTION: "on", MAX_BODY_BYTES: "65536" },
            },
          }),
        ],
        test: { name: "workers", include: ["test/**/*.test.ts"], exclude: ["test/node/**"] },
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
