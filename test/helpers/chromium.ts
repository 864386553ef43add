// Debian's chromium, driven by playwright-core, for the tests that look at a
// page as a person would. The flags keep it off the network this machine does
// not have (no background requests, no component updates).
import { chromium, type Browser } from 'playwright-core';
import { commandProbe, requirement } from './requirements.js';

export const CHROMIUM = '/usr/bin/chromium';

const ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
];

/** Why chromium cannot run here (pass it to needs()), or undefined. */
export const chromiumMissing = await requirement(
  `chromium at ${CHROMIUM} (Debian package chromium)`,
  commandProbe(CHROMIUM),
);

export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM, args: ARGS });
}
