/**
 * A headless Chromium for browser tests, driven by playwright-core: Debian's when installed, else
 * the one the npm package @sparticuz/chromium ships (so `npm install` suffices). Each launch has a
 * profile of its own in a temporary folder, removed on close.
 */
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import packagedChromium from "@sparticuz/chromium";
import { chromium, type BrowserContext } from "playwright-core";

const SYSTEM_CHROMIUM = "/usr/bin/chromium";
const ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

export interface Browser {
  readonly context: BrowserContext;
  close(): Promise<void>;
}

export async function launchBrowser(viewport?: { width: number; height: number }): Promise<Browser> {
  const executablePath = existsSync(SYSTEM_CHROMIUM) ? SYSTEM_CHROMIUM : await packagedChromium.executablePath();
  const profile = mkdtempSync(join(tmpdir(), "edge-streams-chromium-"));
  const context = await chromium.launchPersistentContext(profile, { executablePath, headless: true, args: ARGS, ...(viewport ? { viewport } : {}) });
  return {
    context,
    close: async () => {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}
