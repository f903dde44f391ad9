#!/bin/bash
# mem1_ab.sh ROUNDS: MEM-1 with the old and the new gradlab binaries, alternating processes; claims.json of each run kept.
set -e
D=mem1_ab; mkdir -p $D
for r in $(seq 1 $1); do
  for b in base new; do
    ./gradlab_$b claims --only MEM-1 --out $D/$b-$r > /dev/null 2>&1
  done
done
