"""The Python LLM learner of trialrun (see llm-learner/README.md)."""
