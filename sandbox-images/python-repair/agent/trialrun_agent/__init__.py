"""The trialrun sandbox agent, run by agent.py beside this folder (its docstring describes the protocol)."""
