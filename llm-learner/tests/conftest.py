import os
import sys

# The package is used from its folder (no install step): llm-learner/ goes on the path.
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
