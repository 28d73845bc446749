#!/bin/bash
# Builds twice (the second must succeed too), checks the output, then checks that clean removes it.
set -e
make -s clean
make -s
make -s
[ "$(cat build/site.txt)" = "$(printf 'header\nbody\nfooter')" ]
make -s clean
[ ! -e build ]
