#!/bin/bash
# One prepared device session: acceptance first, then the GPU-only calibration, then simcuda's own
# self-tests with a real driver present. Every step bounded; everything logged under $OUT.
exec > >(tee "$OUT/device-log.txt") 2>&1
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site
date; nvidia-smi -L; nvidia-smi --query-gpu=name,driver_version,compute_mode --format=csv; nproc
python3 -c "import sys, torch, torchvision, kornia, pytest, sam2; print(sys.version.split()[0], 'torch', torch.__version__, 'cuda', torch.version.cuda, 'tv', torchvision.__version__, 'kornia', kornia.__version__, 'pytest', pytest.__version__, 'sam2', sam2.__file__, torch.cuda.device_count(), torch.cuda.get_device_name(0))"
echo "=== acceptance"; SECONDS=0
timeout 330 python3 -m reports acceptance --race-budget 2000,10s; echo "acceptance exit $? in ${SECONDS}s"
tar czf "$OUT/acceptance.tgz" reports/observed/2026-11-27-*
echo "=== calibration"; SECONDS=0
timeout 100 python3 bench/oracle_calibration.py --device cuda --draws 12 2>&1 | grep -v Warning | tee "$OUT/calibration-cuda.txt"; echo "calibration in ${SECONDS}s"
echo "=== tests/simcuda with a driver present"; SECONDS=0
timeout 110 python3 -m pytest tests/simcuda -n 8 -q -p no:cacheprovider -rfE --junitxml="$OUT/simcuda-on-gpu-junit.xml" 2>&1 | tail -40; echo "simcuda tests in ${SECONDS}s"
