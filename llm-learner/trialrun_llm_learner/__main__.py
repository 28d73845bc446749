"""`python -m trialrun_llm_learner --gguf ... --checkpoints ...`: runs the learner until SIGTERM/SIGINT."""

import os
import sys
import warnings

from .options import OptionsError, parse_args


def main(argv: list[str]) -> int:
    try:
        options = parse_args(argv)
    except OptionsError as error:
        sys.stderr.write(f"llm-learner: {error}\n")
        return 2
    # One line per event on stderr, not transformers' progress bars and deprecation notices.
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TQDM_DISABLE", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    warnings.filterwarnings("ignore", category=FutureWarning)
    from .learner import LlmLearner  # only here: the option checks need neither torch nor Kafka

    return LlmLearner(options).run()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
