import { join } from 'node:path';
import type { StackLog } from './component.js';
import { stackPaths } from './state.js';
import { cachedVenv } from './venv.js';

/**
 * The Python side of the LLM path (llm-learner/): PyTorch and peft for the update, transformers to load the GGUF
 * the model server serves, confluent-kafka with its schema-registry serdes for the topics, gguf to write LoRA
 * adapters llama.cpp loads. torch from PyPI brings its CUDA libraries: ~5.7 GB, a few minutes once, then cached.
 */
export const LLM_LEARNER_PACKAGES = [
  'torch==2.15.0',
  'transformers==5.24.0',
  'peft==0.21.2',
  // json: the registry's JSON serdes validate with jsonschema, which the schemaregistry extra alone lacks.
  'confluent-kafka[schemaregistry,json]==2.16.1',
  'gguf==0.19.0',
  'safetensors',
  'pytest',
] as const;

/** The learner's virtualenv folder (installed or not). */
export const llmLearnerVenvDir = (cacheDir: string = stackPaths().cacheDir): string => join(cacheDir, 'llm-learner-torch-2.15.0-venv');

/** The python of `<cacheDir>/llm-learner-torch-<version>-venv`, installed once; an incomplete one is rebuilt. */
export function llmLearnerPython(log: StackLog, options: { cacheDir?: string; python?: string; logFile: string }): Promise<string> {
  return cachedVenv(
    {
      dir: llmLearnerVenvDir(options.cacheDir),
      installs: [[...LLM_LEARNER_PACKAGES]],
      check: 'import torch, transformers, peft, confluent_kafka, confluent_kafka.schema_registry.json_schema, gguf, safetensors, pytest',
      what: 'the LLM learner (PyTorch 2.15, transformers, peft, confluent-kafka, gguf), ~5.7 GB,',
    },
    options.python ?? 'python3',
    options.logFile,
    log,
  );
}
