"""trialrun's LLM learner: trains a LoRA adapter on the LLM's trajectories and rewards from Kafka (see README.md)."""
