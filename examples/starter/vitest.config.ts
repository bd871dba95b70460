import { cloudflareTest } from "@cloudflare/vitest-pool-workers";
import { defineConfig } from "vitest/config";

/**
 * The Worker's API token in tests (test/http.test.ts sends it). It and the environment are set
 * here, over whatever `.dev.vars` (made for `npm start`) says, so tests that call the HTTP API
 * pass with or without that file.
 */
const TEST_API_TOKEN = "test-token";

// The Worker of wrangler.toml runs in workerd; warnings and errors are logged only.
export default defineConfig({
  plugins: [
    cloudflareTest({
      wrangler: { configPath: "./wrangler.toml" },
      miniflare: { bindings: { API_TOKEN: TEST_API_TOKEN, ENVIRONMENT: "test", LOG_LEVEL: "warn" } },
    }),
  ],
});
