"""Measure what the harness costs: per-iteration overhead, whole-run wall time, collection.

    python bench/harness_speed.py [--iterations 60] [--skip-full-runs]

Run from the repository root with the project's environment active.
"""

from __future__ import annotations

import argparse
import io
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

LOOP_TEST = "suites/torchvision_8587_encode_jpeg/test_consecutive_encodes.py"
LOOP_SELECTION = "contiguous and cpu"


def run_pytest(*args: str) -> float:
    """Wall seconds of one pytest run in a fresh process (a failing run stops the benchmark)."""
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args], cwd=REPO, check=True,
                   stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def harness_loop(iterations: int) -> tuple[str, int, float]:
    """The consecutive-encodes test through pytest: its node id, iterations run, seconds in it."""
    with tempfile.TemporaryDirectory() as report_dir:
        run_pytest(LOOP_TEST, "-k", LOOP_SELECTION, "--race-budget", str(iterations), f"--report-dir={report_dir}")
        tests = json.loads(Path(report_dir, "results.json").read_text())["tests"]
    (record,) = [t for t in tests if t["outcome"] == "passed"]
    return record["nodeid"], int(record["properties"]["iterations"]), record["duration_s"]


def bare_loop(nodeid: str, iterations: int) -> float:
    """The same frames, encoded, decoded twice and compared, with no harness: seconds."""
    import numpy as np
    import torch
    from PIL import Image
    from torchvision.io import decode_jpeg, encode_jpeg

    from fixtures.determinism.torch_state import seed_for_test
    from suites.torchvision_8587_encode_jpeg.images import IMAGE_MAKERS, SIZE_RANGE, random_size

    torch.manual_seed(seed_for_test(0, nodeid))
    rng = torch.Generator().manual_seed(seed_for_test(0, nodeid))
    makers = [IMAGE_MAKERS["gradient"], IMAGE_MAKERS["textured"]]
    start = time.perf_counter()
    for iteration in range(iterations):
        height, width = random_size(rng, *SIZE_RANGE["cpu"])
        source = makers[iteration % 2](height, width, rng, torch.device("cpu")).contiguous()
        data = encode_jpeg(source, quality=100)
        pillow = torch.from_numpy(np.asarray(Image.open(io.BytesIO(data.numpy().tobytes())).convert("RGB")).copy())
        for decoded in (pillow.permute(2, 0, 1), decode_jpeg(data)):
            assert (source.float() - decoded.float()).abs().mean().item() <= 5.0
    return time.perf_counter() - start


def import_seconds() -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import torch, torchvision, kornia"], check=True)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=60, help="JPEG loop iterations (default 60)")
    parser.add_argument("--skip-full-runs", action="store_true", help="skip the whole-suite wall times")
    options = parser.parse_args()
    if options.iterations < 1:
        parser.error(f"--iterations {options.iterations}: at least one")

    nodeid, iterations, harness_seconds = harness_loop(options.iterations)
    bare_seconds = bare_loop(nodeid, iterations)
    print(f"JPEG loop, {iterations} frames ({nodeid})")
    print(f"  harness: {iterations / harness_seconds:7.2f} it/s   bare: {iterations / bare_seconds:7.2f} it/s"
          f"   ratio {bare_seconds / harness_seconds:.2f} (target >= 0.9)")

    bare_import = min(import_seconds() for _ in range(3))
    collect = min(run_pytest("--collect-only", "--no-reports") for _ in range(3))
    print(f"collection: pytest --collect-only {collect:.1f} s   bare import torch, torchvision, kornia {bare_import:.1f} s")

    if not options.skip_full_runs:
        serial = run_pytest("--no-reports")
        parallel = run_pytest("--no-reports", "-n", "2")
        print(f"whole CPU run: serial {serial:.1f} s   -n 2 {parallel:.1f} s")


if __name__ == "__main__":
    main()
