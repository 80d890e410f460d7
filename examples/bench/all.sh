#!/bin/sh
# examples/bench/all.sh — every benchmark against PyTorch in one command
# (for the GPU machine; each writes its table to OUTDIR): the op-library
# workloads, the DataLoader, GEMM, and the model training steps, where the
# scripts exist. Usage: sh examples/bench/all.sh OUTDIR [DEVICE]
set -u
out=${1:-/tmp/netcl-bench}
dev=${2:-}
mkdir -p "$out"
here=$(cd "$(dirname "$0")" && pwd)
netcl="$here/../../build/netcl"
devopt=""
[ -n "$dev" ] && devopt="--device $dev"
"$netcl" "$here/run.lua" $devopt > "$out/ops.txt" 2>&1
"$netcl" "$here/run.lua" --device cpu > "$out/ops_cpu.txt" 2>&1
[ -f "$here/loader.lua" ] && "$netcl" "$here/loader.lua" > "$out/loader.txt" 2>&1
[ -f "$here/loader.lua" ] && "$netcl" "$here/loader.lua" --step $devopt > "$out/loader_step.txt" 2>&1
[ -f "$here/gemm.lua" ] && "$netcl" "$here/gemm.lua" $devopt > "$out/gemm.txt" 2>&1
[ -f "$here/gemm_linear.lua" ] && "$netcl" "$here/gemm_linear.lua" $devopt > "$out/gemm_linear.txt" 2>&1
[ -f "$here/models.lua" ] && "$netcl" "$here/models.lua" $devopt > "$out/models.txt" 2>&1
[ -f "$here/layers.lua" ] && "$netcl" "$here/layers.lua" $devopt > "$out/layers.txt" 2>&1
[ -f "$here/optim_step.lua" ] && "$netcl" "$here/optim_step.lua" $devopt > "$out/optim.txt" 2>&1
[ -f "$here/demo_cpu.lua" ] && "$netcl" "$here/demo_cpu.lua" --threads 2,16 > "$out/demo_cpu.txt" 2>&1
tail -n 30 "$out"/*.txt
