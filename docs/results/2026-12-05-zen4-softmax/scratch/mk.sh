#!/bin/bash
# mk.sh SRC OUT [BUILD]: compile a scratch program of this folder against a gradlab build (its core library), -O3.
B=${3:-/work/main/build}; R=$(dirname $B)
g++ -std=c++20 -O3 -Wno-psabi -march=x86-64-v3 -I$R/core -I$B -I$B/core -o $2 $1 $B/libgradlab_core.a $B/libgradlab_core_psabi.a \
  -L/usr/local/cuda/lib64 -Wl,-rpath,/usr/local/cuda/lib64 -L/usr/lib/x86_64-linux-gnu/openmpi/lib -Wl,-rpath,/usr/lib/x86_64-linux-gnu/openmpi/lib \
  -lprotobuf -lonnx_proto -lz -lturbojpeg -lpng16 -lboost_context -lmpi_cxx -lmpi -lnccl -lfmt \
  -L/usr/lib/x86_64-linux-gnu/openblas-pthread -Wl,-rpath,/usr/lib/x86_64-linux-gnu/openblas-pthread -lopenblas -ldnnl -ldl -lfftw3 -lfftw3f -lcudart_static -lcudart -pthread -lrt
