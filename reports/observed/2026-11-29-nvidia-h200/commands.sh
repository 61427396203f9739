#!/bin/bash
# The device session of 2026-11-29 (one NVIDIA H200): run.sh, then run2.sh, then two single commands; wheels carried in .whl/.
# ---- run.sh
# One prepared device session: the README's pytest as a user runs it, simcuda on a real GPU, the race record.
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir .whl/*.whl || exit 1
python3 -m pip install -q --no-deps --no-build-isolation -e . || exit 1
D=$(date +%F)
pack() { tar czf "$OUT/observed.tgz" reports/observed/session-main reports/observed/*-console.txt reports/observed/$D-* fixtures/races/trials.toml 2>/dev/null; }
date; nvidia-smi -L; nproc
python3 -c "import sys, torch, torchvision, kornia, pytest; print(sys.version.split()[0], 'torch', torch.__version__, 'tv', torchvision.__version__, 'kornia', kornia.__version__, 'pytest', pytest.__version__, torch.cuda.get_device_name(0))"
M=reports/observed/session-main; mkdir -p $M
echo "=== main job"; SECONDS=0
( time timeout 200 python3 -m pytest -p no:cacheprovider --report-dir=$M ) > $M/console.txt 2>&1; echo "main exit $? in ${SECONDS}s"
grep -E "passed|failed|torchvision-9606|time by phase|start-up" $M/console.txt | tail -8; pack
echo "=== simcuda on a GPU"; SECONDS=0
timeout 220 python3 bench/simcuda_on_a_gpu.py > reports/observed/simcuda-console.txt 2>&1; echo "simcuda exit $? in ${SECONDS}s"
tail -12 reports/observed/simcuda-console.txt; pack
echo "=== race trigger rates"; SECONDS=0
timeout 125 python3 bench/race_trigger_rates.py --record > reports/observed/rates-console.txt 2>&1; echo "rates exit $? in ${SECONDS}s"
tail -12 reports/observed/rates-console.txt; pack
# ---- run2.sh
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir .whl/*.whl || exit 1
python3 -m pip install -q --no-deps --no-build-isolation -e . || exit 1
D=$(date +%F)
pack() { tar czf "$OUT/observed2.tgz" reports/observed/*-console*.txt reports/observed/$D-* fixtures/races/trials.toml 2>/dev/null; }
echo "=== failing simcuda self-tests, alone"; SECONDS=0
timeout 60 python3 -m pytest -p no:cacheprovider -q -rfE --tb=short tests/simcuda/test_simcuda_distribution.py "tests/simcuda/test_simulated_cuda_unsupported.py" > reports/observed/simcuda-failing-console.txt 2>&1; echo "exit $? in ${SECONDS}s"
grep -E "^(FAILED|ERROR)|Error|passed|failed" reports/observed/simcuda-failing-console.txt | head -20; pack
echo "=== race trigger rates"; SECONDS=0
timeout 170 python3 bench/race_trigger_rates.py --record --rounds 3 --bug torchvision-9606 --race-budget 100,4s > reports/observed/rates-console.txt 2>&1; echo "rates exit $? in ${SECONDS}s"
tail -15 reports/observed/rates-console.txt; pack
# ---- then, each after the wheels and `pip install --no-deps --no-build-isolation -e .`:
timeout 90 python3 -m pytest -p no:cacheprovider -q -rfE --tb=long tests/simcuda/test_simulated_cuda_unsupported.py   # alone
timeout 120 python3 -m pytest -p no:cacheprovider -q -n 8 -rfE --tb=long tests/simcuda --deselect tests/simcuda/test_simcuda_distribution.py
