#!/bin/bash
# The second device session of 2026-11-29 (one NVIDIA H200), the working tree at 169f2d4 copied there,
# wheels carried in .whl/ (kornia 0.9.0, kornia_rs 0.2.0, pytest-html 4.2.0, pytest-metadata 3.1.1,
# pytest-isolated 0.6.0, expecttest 0.3.0, import-linter 2.17, grimp 3.20, uv 0.13.9). Three calls.
# ---- 1: run.sh
export PYTHONUNBUFFERED=1
T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir .whl/*.whl || exit 1
python3 -m pip install -q --no-deps --no-build-isolation -e . || exit 1
R=reports/observed/2026-11-29-nvidia-h200/second-run
mkdir -p $R/main
( time timeout 230 python3 -m pytest -p no:cacheprovider --report-dir=$R/main-reports ) > $R/main/console.txt 2>&1   # the README's pytest, inductor's cache cold
cp $R/main-reports/results.json $R/main/; rm -rf $R/main-reports
timeout 230 python3 bench/simcuda_on_a_gpu.py --out $R/simcuda > $R/simcuda/console.txt 2>&1          # self-tests under -n 8, the main job again (cache warm)
# (its compile-threads step found no time left: the guard was 330 s after the installs)
# ---- 2: timing-probes.txt (after the same installs)
for i in 1 2; do
  /usr/bin/time -f "%e s wall: import torch, torchvision, kornia" python3 -c "import torch, torchvision, kornia"
  /usr/bin/time -f "%e s wall: collect-only, the 9606 folder" python3 -m pytest -p no:cacheprovider -q --no-reports --collect-only suites/torchvision_9606_decode_freed_memory >/dev/null
done
for threads in default 1; do   # fresh caches each
  export TORCHINDUCTOR_CACHE_DIR=/tmp/inductor-$threads TRITON_CACHE_DIR=/tmp/triton-$threads
  [ $threads = 1 ] && export TORCHINDUCTOR_COMPILE_THREADS=1
  timeout 120 python3 -m pytest -p no:cacheprovider -q --no-reports --durations=8 suites/sam2_460_cudagraph
done
# ---- 3: import-probes.txt
for m in "torch" "torch, torchvision, kornia" "torch, torchvision, kornia, torch._dynamo"; do
  python3 -X importtime -c "import $m" 2>&1 | sort -t'|' -k2 -n | tail -12
  /usr/bin/time -f "%e s wall" python3 -c "import $m"
done
