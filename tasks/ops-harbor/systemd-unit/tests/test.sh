#!/bin/bash
# The unit must parse as an INI file and meet every requirement; the checker's exit status is the verdict.
python3 "$(dirname "$0")/check_unit.py" worker.service
