import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ConfigError } from './errors.js';

/**
 * The checkout this build belongs to, whether it runs from dist/ or from source: the nearest folder above
 * this module that has a package.json. Files shipped beside the code (image recipes, helper scripts, the
 * Kafka pom) are found from here, never from the current folder.
 */
export function checkoutRoot(): string {
  const here = fileURLToPath(import.meta.url);
  for (let dir = dirname(here); ; dir = dirname(dir)) {
    if (existsSync(join(dir, 'package.json'))) return dir;
    if (dirname(dir) === dir) throw new Error(`no package.json above ${here}: not run from a trialrun checkout`);
  }
}

/** A file shipped in the checkout, e.g. `stack/kafka/pom.xml`; a ConfigError names it when it is missing. */
export function checkoutFile(relative: string): string {
  const path = join(checkoutRoot(), relative);
  if (!existsSync(path)) throw new ConfigError(`${relative} is missing from the checkout at ${checkoutRoot()}`);
  return path;
}
