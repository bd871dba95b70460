import { cloudflareTest } from "@cloudflare/vitest-pool-workers";
import { defineConfig } from "vitest/config";

// The Worker of wrangler.toml runs in workerd; tests may leave out the API token, and log warnings only.
export default defineConfig({
  plugins: [cloudflareTest({ wrangler: { configPath: "./wrangler.toml" }, miniflare: { bindings: { ENVIRONMENT: "development", LOG_LEVEL: "warn" } } })],
});
