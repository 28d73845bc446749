#!/bin/bash
# Usage: words.sh FILE — prints the number of words in FILE.
wc -l < "$1"
