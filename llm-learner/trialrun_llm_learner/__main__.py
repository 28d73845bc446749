"""`python -m trialrun_llm_learner --gguf ... --checkpoints ...`: runs the learner until SIGTERM/SIGINT."""

import sys

from .options import OptionsError, parse_args


def main(argv: list[str]) -> int:
    try:
        options = parse_args(argv)
    except OptionsError as error:
        sys.stderr.write(f"llm-learner: {error}\n")
        return 2
    from .learner import LlmLearner  # only here: the option checks need neither torch nor Kafka

    return LlmLearner(options).run()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
