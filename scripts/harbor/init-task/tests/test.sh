#!/bin/bash
# Runs from the working folder and writes the reward, as `harbor tasks init`'s template says.
text=$(mktemp)
printf 'one two  three\nfour\tfive\n\nsix\n' > "$text"
if [ "$(bash words.sh "$text" | tr -d ' ')" = 6 ]; then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi
