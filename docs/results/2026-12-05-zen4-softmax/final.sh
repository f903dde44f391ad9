#!/bin/bash
# Issue 20's items on a clean clone of the head, one after another (nothing else running).
cd "${CLONE:?a clean clone of the commit, built}"
R="${OUT:?a folder for the results}"; mkdir -p "$R"
git rev-parse HEAD > $R/commit.txt; lscpu > $R/lscpu.txt; date -u > $R/start.txt
/usr/bin/python3 tools/peers/compare_simplenet.py --epochs 1 --rounds 5 --json $R/simplenet.json > $R/simplenet.txt 2>&1
/usr/bin/python3 tools/peers/compare_simplenet.py --model mlp-1024 --limit 6400 --epochs 1 --rounds 3 --json $R/mlp1024.json > $R/mlp1024.txt 2>&1
env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE build/bench/bench_gemm --benchmark_filter='gemm/(medium|eigen|openblas|onednn)/(fc|cnn_fc)' --benchmark_repetitions=3 --benchmark_format=json > $R/gemm_shapes.json 2> $R/gemm_shapes.err
for r in 1 2 3; do build/tools/gradlab claims --only MEM-1 --out $R/mem1-$r > $R/mem1-$r.txt 2>&1; done
for i in $(seq -w 1 24); do
  env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE build/bench/gemm_calls --n 1024 2048 --kernels balanced onednn \
    --rounds 24 --json $R/calls_$i.json > $R/calls_$i.txt 2>&1
done
date -u > $R/end.txt
echo done > $R/DONE
