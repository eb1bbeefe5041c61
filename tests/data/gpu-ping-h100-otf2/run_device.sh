#!/bin/bash
# Records tests/data/ping-tracer/gpu_ping.c under the tracer with 2 ranks on the one GPU of an H100 machine (real
# libcuda pointer classification, real CUPTI copies) and tars the OTF2 archive into $OUT.
# Run from the repository root with tracer/build carried (libg2gtrace.so + libopen-trace-format2.so.10).
set -u
OUT=${OUT:-/tmp/gpu-ping-out}; mkdir -p "$OUT"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export LD_LIBRARY_PATH=$PWD/tracer/build${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
# CUPTI and the CUDA runtime from the image's pip-installed nvidia packages (recorded 2026-11-25:
# H100 80GB HBM3, driver 580.159.04, CUDA 13 libraries, Open MPI 4.1.6)
CUPTI=$(python3 -c "import glob,nvidia;print(([p for d in nvidia.__path__ for p in glob.glob(d+'/**/libcupti.so*',recursive=True)]+[''])[0])")
RT=$(python3 -c "import glob,nvidia;print(([p for d in nvidia.__path__ for p in glob.glob(d+'/**/libcudart.so*',recursive=True)]+[''])[0])")
echo "CUPTI: ${CUPTI:-none}  cudart: ${RT:-none}"; nvidia-smi -L | head -2
mkdir -p /tmp/gp && mpicc -O1 -o /tmp/gp/gpu_ping tests/data/ping-tracer/gpu_ping.c || exit 1
rm -rf /tmp/gp/trace
mpirun --allow-run-as-root -np 2 --bind-to none -x LD_LIBRARY_PATH --mca btl self,vader \
  -x LD_PRELOAD=$PWD/tracer/build/libg2gtrace.so -x G2G_TRACE_DIR=/tmp/gp/trace -x G2G_TRACE_VERBOSE=1 \
  ${CUPTI:+-x G2G_LIBCUPTI=$CUPTI} ${RT:+-x G2G_LIBCUDART=$RT} /tmp/gp/gpu_ping; echo "rc $?"
tar -C /tmp/gp -czf "$OUT/gpu-ping-h100-otf2.tar.gz" trace && ls -la "$OUT"
