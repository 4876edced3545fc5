/**
 * Debian's Chromium, driven by playwright-core, for the page tests. CI installs it (.ci/run):
 * there a missing browser is a failure; elsewhere the browser tests are skipped with a warning.
 */
import { existsSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
export const hasBrowser = existsSync(CHROMIUM);
if (!hasBrowser && process.env.CI) throw new Error(`${CHROMIUM} not found: apt-get install chromium`);
if (!hasBrowser) console.warn(`${CHROMIUM} not found (apt-get install chromium): skipping the browser tests`);

/** `it` when Chromium is installed, `it.skip` otherwise. */
export const browserIt = hasBrowser ? it : it.skip;

/** Headless Chromium with the flags this closed network needs (no background connections). */
export function launchBrowser(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
}
