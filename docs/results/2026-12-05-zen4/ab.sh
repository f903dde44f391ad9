#!/bin/bash
# ab.sh OLD NEW [ROUNDS]: SimpleNet epochs of two builds of `gradlab`, alternating, two
# epochs each per round; prints "old"/"new" and each epoch's samples/s (abs.py sums up).
old=$1 new=$2
for r in $(seq 1 "${3:-8}"); do
  echo -n "old "; "$old" train --epochs 2 --threads 2 2>&1 | grep "^epoch" | awk '{printf "%s ", $(NF-1)}'; echo
  echo -n "new "; "$new" train --epochs 2 --threads 2 2>&1 | grep "^epoch" | awk '{printf "%s ", $(NF-1)}'; echo
done
