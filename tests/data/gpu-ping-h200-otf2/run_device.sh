#!/bin/bash
# Records tests/data/ping-tracer/gpu_ping.c under the tracer on 2 GPUs of the H200 machine (real
# libcuda pointer classification, real CUPTI copies) and tars the OTF2 archive into $OUT.
# Run from the repository root with tracer/build carried (libg2gtrace.so + libopen-trace-format2.so.10).
set -u
OUT=${OUT:-/tmp/gpu-ping-out}; mkdir -p "$OUT"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export LD_LIBRARY_PATH=$PWD/tracer/build${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
CUPTI=$(ls /usr/local/cuda*/extras/CUPTI/lib64/libcupti.so /usr/local/cuda*/lib64/libcupti.so 2>/dev/null | head -1)
RT=$(ls /usr/local/cuda*/lib64/libcudart.so 2>/dev/null | head -1)
echo "CUPTI: ${CUPTI:-none}  cudart: ${RT:-none}"; nvidia-smi -L | head -2
mkdir -p /tmp/gp && mpicc -O1 -o /tmp/gp/gpu_ping tests/data/ping-tracer/gpu_ping.c || exit 1
rm -rf /tmp/gp/trace
mpirun --allow-run-as-root -np 2 --bind-to none -x LD_LIBRARY_PATH --mca btl self,vader \
  -x LD_PRELOAD=$PWD/tracer/build/libg2gtrace.so -x G2G_TRACE_DIR=/tmp/gp/trace -x G2G_TRACE_VERBOSE=1 \
  ${CUPTI:+-x G2G_LIBCUPTI=$CUPTI} ${RT:+-x G2G_LIBCUDART=$RT} /tmp/gp/gpu_ping; echo "rc $?"
tar -C /tmp/gp -czf "$OUT/gpu-ping-h200-otf2.tar.gz" trace && ls -la "$OUT"
