#!/usr/bin/env bash
# Acceptance run for issue 20 (step5), one lock hold: before = binaries built at 4fd696d,
# after = build/ at ee7caf3. Rounds alternate before/after.
set -u
cd /work/wt/step
OUT=/tmp/step5_res/final
B=/tmp/step5_before
A=build
log() { echo "== $(date -u +%H:%M:%S) $(uptime | sed 's/.*load/load/') :: $*" | tee -a $OUT/log.txt; }
for r in 1 2; do
  log "breakdown before round $r"
  $B/bench_step_breakdown --benchmark_min_time=0.1 --benchmark_repetitions=3 --benchmark_enable_random_interleaving=true --benchmark_out=$OUT/breakdown_before_$r.json --benchmark_out_format=json > /dev/null 2>&1
  log "breakdown after round $r"
  $A/bench/bench_step_breakdown --benchmark_min_time=0.1 --benchmark_repetitions=3 --benchmark_enable_random_interleaving=true --benchmark_out=$OUT/breakdown_after_$r.json --benchmark_out_format=json > /dev/null 2>&1
done
for r in 1 2 3; do
  log "epoch round $r"
  { echo "before round $r"; $B/gradlab train --epochs 1 --threads 2; echo "after round $r"; $A/tools/gradlab train --epochs 1 --threads 2; } >> $OUT/epochs.txt 2>&1
done
log "gemm peers"
$A/bench/bench_gemm --benchmark_filter='gemm/(medium|eigen|openblas|onednn)/(fc|square/(1024|2048)x).*threads:2' --benchmark_repetitions=3 --benchmark_enable_random_interleaving=true --benchmark_min_time=0.1 --benchmark_out=$OUT/gemm_peers.json --benchmark_out_format=json > /dev/null 2>&1
log "simplenet vs pytorch"
/usr/bin/python3 tools/peers/compare_simplenet.py --gradlab $A/tools/gradlab --epochs 1 --rounds 2 --json $OUT/simplenet_peers.json > $OUT/simplenet_peers.txt 2>>$OUT/log.txt
log "mlp-1024 vs pytorch"
/usr/bin/python3 tools/peers/compare_simplenet.py --gradlab $A/tools/gradlab --model mlp-1024 --limit 3200 --epochs 1 --rounds 2 --json $OUT/mlp1024_peers.json > $OUT/mlp1024_peers.txt 2>>$OUT/log.txt
log "done part 1"
log "MEM-1"
$A/tools/gradlab claims --only MEM-1 --out $OUT/claims > $OUT/mem1.txt 2>&1
log "done"
