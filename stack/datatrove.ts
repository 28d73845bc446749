import { join } from 'node:path';
import type { StackLog } from './component.js';
import { stackPaths } from './state.js';
import { cachedVenv } from './venv.js';

/**
 * Hugging Face's datatrove, the dedup tool bench:dedup compares the task job with: the package, spaCy (its
 * English word tokenizer is `spacy.blank("en")`, no model to fetch), xxhash (its default shingle hash, below 4
 * as its `processing` extra asks), orjson (its JSON Lines reader), regex (its text normalisation) and tokenizers
 * (imported by its pipeline package). Only what the MinHash pipeline imports, not the `processing` extra's
 * fastText, NLTK and trafilatura.
 */
export const DATATROVE_VERSION = '0.10.1';
export const DATATROVE_PACKAGES = [`datatrove==${DATATROVE_VERSION}`, 'spacy==3.8.18', 'xxhash==3.8.2', 'orjson==3.13.0', 'regex==2026.12.2', 'tokenizers==0.23.3'] as const;

/** The python of `<cacheDir>/datatrove-<version>-venv`, installed once (~1 minute, ~400 MB); an incomplete one is rebuilt. */
export function datatrovePython(log: StackLog, options: { cacheDir?: string; python?: string; logFile: string }): Promise<string> {
  return cachedVenv(
    {
      dir: join(options.cacheDir ?? stackPaths().cacheDir, `datatrove-${DATATROVE_VERSION}-venv`),
      installs: [[...DATATROVE_PACKAGES]],
      check: 'import datatrove.pipeline.dedup.minhash, datatrove.executor, datatrove.pipeline.readers, datatrove.pipeline.writers, spacy, xxhash, orjson; spacy.blank("en")',
      what: `datatrove ${DATATROVE_VERSION} with spaCy, xxhash and orjson`,
    },
    options.python ?? 'python3',
    options.logFile,
    log,
  );
}
