#!/usr/bin/env bash
# Builds the GPU library and the parity program on a machine with an NVIDIA GPU (no R needed),
# runs `make check` and the timing cases of the GPU targets, and writes the output, headed by
# the device, driver and date, to $OUT/cuda_parity.txt (or ./cuda_parity.txt), for
# bench/results/.
#
#   tools/cuda-parity/device-check.sh [quick|full]
#     quick  make check only (about a minute after the build)
#     full   (default) also kernel ridge's factorisation at n = 20,000 on 2 CPU threads and the
#            GPU, at n = 40,000 on all CPU threads and the GPU, and gem's head on the MNIST
#            shapes (60,000 x 14,000) on all CPU threads and the GPU, and the SVM's kernel
#            rows at 100,000 points of 54 columns (Covertype's shape) with end-to-end SVM
#            solves of 20,000 rows on 2 CPU threads and with the GPU backend, and hgk's passes
#            and objective at n1 = n2 = 2,500 (2 CPU threads) and 20,000 (all CPU threads), and
#            a 20,000 x 20,000 tessellated kernel block (2 CPU threads and the GPU)
#            With Covertype at hand (data/covtype.data.gz here, a copy of the UCI file carried
#            along, or KL_SVM_DATA=<its path>), also the core's SVM solve of Lodgepole pine
#            (label 2) against the rest with kernel_svm's width and cost on Covertype's cells
#            (gamma 42, cost 32, inputs scaled to [0, 1]): 25,000 rows on 2 CPU threads and
#            the GPU, and 100,000 rows on the GPU
# Eigen: EIGEN_INC, else tools/cuda-parity/eigen (a copy of the headers carried along), else
# the system's.
set -u
cd "$(dirname "$0")"
mode=${1:-full}
out_dir=${OUT:-.}
mkdir -p "$out_dir"
out="$out_dir/cuda_parity.txt"
eigen=${EIGEN_INC:-}
if [ -z "$eigen" ] && [ -f eigen/Eigen/Dense ]; then eigen=$PWD/eigen; fi
jobs=$(nproc 2>/dev/null || echo 4)
if [ -n "$eigen" ]; then
  make -j"$jobs" EIGEN_INC="$eigen" all || exit 1
else
  make -j"$jobs" all || exit 1
fi
{
  gpu=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -n 1)
  echo "# tools/cuda-parity ($mode) on ${gpu:-unknown GPU}, $(nproc) CPU threads, $(date -u +%Y-%m-%d)"
  make -s check
  status=$?
  if [ "$mode" = full ]; then
    ./parity --op chol --chol-n 20000 --d 54 --threads 2 --reps 1 || status=1
    ./parity --op chol --chol-n 40000 --d 54 --reps 1 || status=1
    ./parity --op cls --cls-n 60000 --cls-p 14000 --reps 1 || status=1
    ./parity --op rows --n 100000 --m 2000 --d 54 --svm-n 20000 --threads 2 --reps 1 || status=1
    ./parity --op hgk --n 2500 --m 2500 --threads 2 --reps 3 || status=1
    ./parity --op hgk --n 20000 --m 20000 --threads 16 --reps 1 || status=1
    ./parity --op tkl --n 20000 --m 20000 --threads 2 --reps 1 || status=1
    data=${KL_SVM_DATA:-data/covtype.data.gz}
    if [ -f "$data" ]; then
      csv=$(mktemp)
      gzip -dcf "$data" > "$csv"
      ./parity --op svm --svm-data "$csv" --svm-class 2 --svm-gamma 42 --svm-cost 32 \
        --svm-n 25000 --m 2000 --threads 2 || status=1
      ./parity --op svm --svm-data "$csv" --svm-class 2 --svm-gamma 42 --svm-cost 32 \
        --svm-n 100000 --m 2000 --threads 2 --svm-cpu no || status=1
      rm -f "$csv"
    else
      echo "(no Covertype file at $data: the SVM solves on its rows are skipped)"
    fi
  fi
  echo "exit status $status"
} 2>&1 | tee "$out"
grep -q "^exit status 0$" "$out"
