# Known-bad variant for calibration, appended to a task's module: ends the test process with status 0
# while pytest is still collecting, before any test has run.
import os

os._exit(0)
