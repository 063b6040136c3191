#!/usr/bin/env bash
# DLIO's unet3d workload (PyTorch loader, CPU only), for dc-pipeline (run and overhead) and the tests:
#   dlio.sh generate DATA_DIR OUT_DIR [HYDRA_OVERRIDE...]   writes the dataset, then evicts it from the page cache
#   dlio.sh train DATA_DIR OUT_DIR [HYDRA_OVERRIDE...]      trains on it; DLIO's summary.json is in OUT_DIR
#   dlio.sh evict DATA_DIR                                  drops the dataset's pages from the page cache
# DFTracer records into OUT_DIR unless DFTRACER_ENABLE=0. DLIO is the venv scripts/setup.sh --test makes
# (DLIO_VENV overrides it).
set -euo pipefail

DLIO_VENV=${DLIO_VENV:-/opt/datacrumbs-dlio}
dlio=$DLIO_VENV/bin/dlio_benchmark
if [ ! -x "$dlio" ]; then
  echo "dlio.sh: DLIO is not installed: $dlio is missing; install it with scripts/setup.sh --test" \
    "(or point DLIO_VENV at a venv that has dlio_benchmark)" >&2
  exit 127
fi

usage() { echo "usage: dlio.sh generate|train DATA_DIR OUT_DIR [HYDRA_OVERRIDE...] | dlio.sh evict DATA_DIR" >&2; exit 2; }

# A real unet3d dataset is larger than memory, and DLIO's own generator leaves it cached: training would read
# memory. Dirty pages cannot be dropped, hence the fdatasync first.
evict() {
  "$DLIO_VENV/bin/python" - "$1" <<'PY'
import os, sys
for root, _, files in os.walk(sys.argv[1]):
    for name in files:
        fd = os.open(os.path.join(root, name), os.O_RDONLY)
        os.fdatasync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        os.close(fd)
PY
}

[ $# -ge 2 ] || usage
phase=$1
data=$(realpath -m "$2")
if [ "$phase" = evict ]; then
  [ $# -eq 2 ] || usage
  evict "$data"
  exit 0
fi
[ $# -ge 3 ] || usage
out=$(realpath -m "$3")
shift 3
case $phase in
  generate) flow=(++workload.workflow.generate_data=True ++workload.workflow.train=False) ;;
  train) flow=(++workload.workflow.generate_data=False ++workload.workflow.train=True) ;;
  *) usage ;;
esac
mkdir -p "$out"
export DFTRACER_ENABLE=${DFTRACER_ENABLE:-1} DFTRACER_INC_METADATA=1
# The mpich wheel brings UCX, whose memory hooks (libucm, patching the process's mmap, munmap and dlopen) crashed DLIO's
# main process with a segmentation fault in 6 of 80 traced runs here, at random places (importing torch._C, in yaml's
# scanner); with them off, 0 of 80. One process needs no UCX memory registration. A crash still prints Python's stacks.
export UCX_MEM_EVENTS=no PYTHONFAULTHANDLER=1
# Checkpointing is off, but DLIO allocates the model's size anyway unless it is 0.
"$dlio" workload=unet3d_a100 "${flow[@]}" \
  ++workload.workflow.checkpoint=False ++workload.checkpoint.model_size=0 \
  ++workload.checkpoint.checkpoint_folder="$out/checkpoints" \
  ++workload.dataset.data_folder="$data" ++workload.output.folder="$out" hydra.run.dir="$out/hydra" "$@"
if [ "$phase" = generate ]; then
  evict "$data"
fi
