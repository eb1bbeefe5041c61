#!/bin/bash
# Calibration + validation runs on one GPU node, as done for docs/validation/h200x4.md.
#
#   bash python/g2gsim/calibrate/run_node.sh OUTDIR [NP]
#
# From the repository root of a g2gsim checkout on the GPU node (python3 with numpy, mpi4py, cupy;
# Open MPI's mpirun).  When .whl/ holds the libucx-cu13 wheel (../shared/DEVICE.md) it is unpacked
# and Open MPI's UCX layer uses it, which makes an Open MPI built without CUDA support move device
# buffers (cuda_copy, cuda_ipc).  When .whl/tracer/ holds libg2gtrace.so (and the OTF2 library) the
# workloads of G2G_TRACED (default: all but the wide Jacobi and matmul-8192) also run under the
# tracer.  G2G_SECTIONS picks measure.py's sections; G2G_MEASURE_ONLY=1 skips the workloads.
# Everything lands in OUTDIR and in OUTDIR.tgz.
set -u
OUTDIR=${1:-calibrate-out}
NP=${2:-4}
mkdir -p "$OUTDIR/runs" "$OUTDIR/traced"
OUTDIR=$(cd "$OUTDIR" && pwd)
HERE=$(cd "$(dirname "$0")" && pwd)
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
T0=$(date +%s)
stamp() { echo "=== [$(( $(date +%s) - T0 )) s] $*"; }

UCX=""
if ls .whl/libucx*.whl >/dev/null 2>&1; then
  python3 -c "import zipfile,glob; zipfile.ZipFile(sorted(glob.glob('.whl/libucx*.whl'))[0]).extractall('/tmp/ucx')"
  export LD_LIBRARY_PATH=/tmp/ucx/libucx/lib:/tmp/ucx/libucx_cu13.libs:${LD_LIBRARY_PATH:-}
  chmod +x /tmp/ucx/libucx/bin/* 2>/dev/null; UCX=/tmp/ucx/libucx/bin/
fi
export UCX_TLS=${UCX_TLS:-sm,self,cuda_copy,cuda_ipc}
# CUPTI and the CUDA runtime for the tracer: a CUDA toolkit's, else the pip-installed nvidia packages'
find_cuda_lib() {
  ls /usr/local/cuda*/extras/CUPTI/lib64/$1.so* /usr/local/cuda*/lib64/$1.so* 2>/dev/null | head -1 ||
  true; python3 -c "import glob,nvidia;print(([p for d in nvidia.__path__ for p in glob.glob(d+'/**/$1.so*',recursive=True)]+[''])[0])" 2>/dev/null
}
export G2G_LIBCUPTI=${G2G_LIBCUPTI:-$(find_cuda_lib libcupti | head -1)}
export G2G_LIBCUDART=${G2G_LIBCUDART:-$(find_cuda_lib libcudart | head -1)}
MPIRUN=(mpirun --allow-run-as-root -x LD_LIBRARY_PATH -x UCX_TLS -x PYTHONUNBUFFERED -x NCCL_NVLS_ENABLE
        -x G2G_LIBCUPTI -x G2G_LIBCUDART --mca pml ucx --mca btl ^vader,openib,smcuda,tcp)

{
  stamp "machine"
  date -u; hostname; uname -r
  nvidia-smi --query-gpu=index,name,pci.bus_id,driver_version,memory.total --format=csv
  nvidia-smi topo -m
  mpirun --version | head -1
  ${UCX}ucx_info -v
  ${UCX}ucx_info -d | grep -E "Transport|Device" | sort | uniq -c
  ${UCX}ucx_info -c | grep -E "RNDV_THRESH|ZCOPY_THRESH|BCOPY_THRESH|MAX_SHORT|CUDA_IPC|CUDA_COPY" | head -40
  python3 -c "import numpy, mpi4py, cupy; print('numpy', numpy.__version__, 'mpi4py', mpi4py.__version__, 'cupy', cupy.__version__)"
  lscpu | grep -E "Model name|Socket|NUMA node\(s\)|^CPU\(s\)"
} > "$OUTDIR/machine.txt" 2>&1
cat "$OUTDIR/machine.txt"

# 1. can this MPI take device buffers?  (a non-CUDA-aware one segfaults: try it in its own job)
stamp "device-buffer smoke test"
cat > /tmp/g2g_smoke.py <<'EOF'
from mpi4py import MPI
import cupy as cp
c = MPI.COMM_WORLD; r = c.Get_rank()
cp.cuda.Device(r % cp.cuda.runtime.getDeviceCount()).use()
a = cp.full(1 << 20, r + 1, cp.uint8); cp.cuda.runtime.deviceSynchronize()
buf = (getattr(MPI, "buffer", None) or MPI.memory).fromaddress(int(a.data.ptr), a.nbytes)
if r == 0: c.Send([buf, MPI.BYTE], 1, 0)
elif r == 1: c.Recv([buf, MPI.BYTE], 0, 0); assert int(a[0]) == 1 and int(a[-1]) == 1, "wrong data"
c.Barrier()
if r == 0: print("device buffers OK")
EOF
DEVICE=off
if timeout 90 "${MPIRUN[@]}" -np 2 python3 /tmp/g2g_smoke.py 2>&1 | tee "$OUTDIR/smoke.log" | grep -q "device buffers OK"; then
  DEVICE=on
fi
echo "device buffers: $DEVICE"

# 2. calibration measurements
stamp "measure"
timeout 330 "${MPIRUN[@]}" -np "$NP" python3 "$HERE/measure.py" -o "$OUTDIR/raw.json" --device $DEVICE ${G2G_SECTIONS:+--sections $G2G_SECTIONS} 2>&1 | tee "$OUTDIR/measure.log"

# 2b. the same measurements again, minutes later: the run-to-run spread (G2G_SECOND_RUN=0 skips it)
if [ "${G2G_SECOND_RUN:-1}" = 1 ]; then
  stamp "measure (second run)"
  sleep "${G2G_RUN_GAP_S:-120}"   # minutes apart, not back to back
  timeout 330 "${MPIRUN[@]}" -np "$NP" python3 "$HERE/measure.py" -o "$OUTDIR/raw-run2.json" --device $DEVICE ${G2G_SECTIONS:+--sections $G2G_SECTIONS} 2>&1 | tee "$OUTDIR/measure-run2.log"
fi

# 3. validation workloads, each mode (G2G_MEASURE_ONLY=1: none, nor traced ones)
[ "${G2G_MEASURE_ONLY:-0}" = 1 ] && MODES="" || MODES="hostcopy device"
for mode in $MODES; do
  [ $mode = device ] && [ $DEVICE = off ] && continue
  stamp "workloads $mode"
  timeout 200 "${MPIRUN[@]}" -np "$NP" python3 "$HERE/workloads.py" --mode $mode -o "$OUTDIR/runs" 2>&1 | tee -a "$OUTDIR/workloads.log"
done

# 4. the workloads of G2G_TRACED again, under the PMPI/OTF2 tracer
if [ -f .whl/tracer/libg2gtrace.so ] && [ -n "$MODES" ]; then
  TL=$(pwd)/.whl/tracer
  for mode in hostcopy device; do
    [ $mode = device ] && [ $DEVICE = off ] && continue
    stamp "traced workloads $mode"
    NOCUPTI=0; [ $mode = device ] && NOCUPTI=1     # UCX's own cuda copies are not the application's
    LD_LIBRARY_PATH=$TL:$LD_LIBRARY_PATH timeout 240 "${MPIRUN[@]}" -np "$NP" \
      -x LD_PRELOAD=$TL/libg2gtrace.so -x G2G_TRACE_DIR="$OUTDIR/traced/$mode" -x G2G_NO_CUPTI=$NOCUPTI \
      -x G2G_TRACE_VERBOSE=1 \
      python3 "$HERE/workloads.py" --mode $mode --only "${G2G_TRACED:-pingpong,jacobi,jacobi-overlap,jacobi-nb,jacobi-nb-overlap,matmul,allpairs}" -o "$OUTDIR/traced" --tag=-traced 2>&1 \
      | tee -a "$OUTDIR/traced.log"
  done
fi

stamp "done"
tar czf "$OUTDIR.tgz" -C "$(dirname "$OUTDIR")" "$(basename "$OUTDIR")"
ls -la "$OUTDIR" "$OUTDIR.tgz"
