"""The long tail of bench:loop: a visible test that sleeps in some sandboxes.

One draw per sandbox (an episode's, or a verification's), kept in /tmp for the sandbox's later test runs, so a
slow episode is slow in every pytest run it makes. bench/loop.ts sets the two constants below per task.
"""

import os
import random
import time

FRACTION = 0.1
SECONDS = 15
MARK = "/tmp/trialrun-long-tail"


def test_takes_its_time():
    if not os.path.exists(MARK):
        with open(MARK, "w") as mark:
            mark.write("slow" if random.random() < FRACTION else "fast")
    with open(MARK) as mark:
        if mark.read() == "slow":
            time.sleep(SECONDS)
