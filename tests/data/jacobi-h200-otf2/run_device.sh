#!/bin/bash
# Traces jacobi_streams.py (overlap and no-overlap) on 4 ranks of the 4 x H200 machine with
# tracer/build/libg2gtrace.so, plus an untraced run of each for reference; $OUT gets
# jacobi-h200-otf2.tar.gz (both OTF2 archives) and the JSON of each run.  Run from the repository
# root with .whl (libucx-cu13 wheel, see /work/shared/DEVICE.md) and tracer/build (the tracer and
# libopen-trace-format2.so.10 built elsewhere) carried along.
set -u
OUT=${OUT:-/tmp/jacobi-out}
ITERS=${ITERS:-100}
mkdir -p "$OUT"
python3 -c "import zipfile,glob; zipfile.ZipFile(glob.glob('.whl/libucx*.whl')[0]).extractall('/tmp/ucx')"
export LD_LIBRARY_PATH=/tmp/ucx/libucx/lib:/tmp/ucx/libucx_cu13.libs:$PWD/tracer/build${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export UCX_TLS=sm,self,cuda_copy,cuda_ipc NCCL_NVLS_ENABLE=0
CUPTI=$(ls /usr/local/cuda*/extras/CUPTI/lib64/libcupti.so /usr/local/cuda*/lib64/libcupti.so 2>/dev/null | head -1)
echo "CUPTI: ${CUPTI:-none found}"; nvidia-smi -L
APP=tests/data/jacobi-h200-otf2/jacobi_streams.py
MPI="mpirun --allow-run-as-root -np 4 --bind-to none -x LD_LIBRARY_PATH -x UCX_TLS -x NCCL_NVLS_ENABLE --mca pml ucx --mca btl ^vader,openib,smcuda,tcp"
W=/tmp/jacobi-traces
rm -rf $W && mkdir -p $W
for v in overlap no-overlap; do
  $MPI python3 $APP --$v --iterations $ITERS --json $W/$v-untraced.json 2>&1 | grep -v "^\s*$" | tail -8
  $MPI -x LD_PRELOAD=$PWD/tracer/build/libg2gtrace.so -x G2G_TRACE_DIR=$W/$v -x G2G_TRACE_VERBOSE=1 \
       ${CUPTI:+-x G2G_LIBCUPTI=$CUPTI} python3 $APP --$v --iterations $ITERS --json $W/$v-traced.json 2>&1 | grep -v "^\s*$" | tail -8
done
tar -C $W -czf "$OUT/jacobi-h200-otf2.tar.gz" overlap no-overlap
cp $W/*.json "$OUT/"
ls -la "$OUT"
