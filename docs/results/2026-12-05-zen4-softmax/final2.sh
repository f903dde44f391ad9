#!/bin/bash
# The SimpleNet epoch (to the millisecond) and MEM-1 four times, on the clean clone of the head.
cd "${CLONE:?a clean clone of the commit, built}"
R=$R2; mkdir -p $R
git rev-parse HEAD > $R/commit.txt; date -u > $R/start.txt
/usr/bin/python3 tools/peers/compare_simplenet.py --epochs 1 --rounds 5 --json $R/simplenet.json > $R/simplenet.txt 2>&1
for r in 1 2 3 4; do build/tools/gradlab claims --only MEM-1 --out $R/mem1-$r > $R/mem1-$r.txt 2>&1; done
date -u > $R/end.txt
echo done > $R/DONE
