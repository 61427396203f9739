"""simcuda: a simulated CUDA device on the CPU, to test device placement in CPU-only CI.

```python
from simcuda import simulated_cuda, SimulationUnsupported, is_simulated, real_cpu

with simulated_cuda(device_count=2) as sim:      # everything restored on exit, even on an exception
    sim.set_device(1)                             # "cuda" now means cuda:1
    x = torch.rand(2, 3, device="cuda:1")         # x.device == torch.device("cuda:1"), x.is_cuda
    y = x.cpu() + 1                               # real data: .item(), .tolist(), print all work
    sim.allocations                               # [Allocation(op, device, shape, dtype, where, source)]: .caller
    sim.devices_touched()                         # {"cuda:1", "cpu"}
    sim.foreign_allocations(allowed={"cuda:1", "cpu"})   # made on a device the test never asked for
real_cpu(x)                                       # the CPU tensor holding x's data (plain tensors: as is)
is_simulated(x)                                   # True
gpu_type(x), gpu_vars(x)                          # type(x) and vars(x) as on a GPU (a simulated TVTensor's
                                                  # own are a twin class and the simulation's fields)
```

`pytest --simcuda` runs a project's own test suite on a simulated `cuda:1` (pytest_plugin.py; the
package's README says what it proves and what it never claims).

Inside the context a simulated tensor is a wrapper subclass (tensor.py) over a real CPU tensor; a
dispatch mode runs every ATen op on the CPU data under PyTorch's device rules (rules.py), autograd
included (it lives on the CPU data), and logs every tensor made (allocations.py); a function mode
re-expresses the Python entry points whose C++ bindings would reach real CUDA (functions.py,
indexing.py); `torch.cuda`'s device/stream/event API is stood in for (stand_ins.py). Nothing it
does reaches the real CUDA runtime, whatever GPUs the machine has: no device guard is opened for a
simulated tensor, and the autograd engine never sees one. What it cannot imitate raises
`SimulationUnsupported` naming the feature: raw CUDA graphs (torch.compile's graph trees are
simulated: graphs.py), nvJPEG (torchvision.io on cuda), CUDA from other threads,
`torch.Generator(device="cuda")`, CUDA event timing, ops without a CPU kernel. Pinned memory runs
through ATen's own path (pinning.py), autograd on the CPU data.

It proves placement under PyTorch's op-level rules, the CUDA-graph tree's invalidation rules, what
pinning does to the objects pinned, and whether work on streams, the host's reads and writes and
the caching allocator's reuse are ordered as CUDA requires (streams.py: an unordered conflict
raises StreamRace); it says nothing about kernels, numerics (TF32), real timing, memory (pinning
locks no page) or speed. Known limits:
- 0-dim CPU tensors may meet CUDA tensors in every op (FakeTensor's rule); the few CUDA kernels that
  reject them are missed (a false negative, never a false alarm). Every mismatch gets
  TensorIterator's text; argument-checking kernels word it differently after the common prefix
  "Expected all tensors to be on the same device".
- Random ops on a simulated device draw from a generator of the device's own (torch.cuda's RNG
  functions answer with it), apart from the CPU's, as on a GPU; seeded alike it gives the CPU's
  numbers, not CUDA's (`simulated_cuda(shared_generator=True)`: every device draws from the CPU's).
- cuDNN is disabled inside, so composite ops take their native paths.
- CUDA use from another thread is refused: while the real CUDA is uninitialised (always, on a
  machine without a GPU), by CUDA's lazy init; once a real GPU was used in the process, in a thread
  started while the simulation is open, by a guard of its own (threads.py: factories, moves, ops on
  real CUDA tensors, `torch.tensor(..., device=)`). Nested tensors' constructor and
  `UntypedStorage(device=)` pass beneath it there, as does anything from a thread started before:
  they reach the real GPU, where the plugin's watch sees an allocation and CUDA's invalid ordinal is
  read as a refusal (seen on an H200).
- C++ entry points that reach CUDA without passing `torch.cuda._lazy_init` and that no stand-in
  covers fail with PyTorch's own driver error (legacy `x.type("torch.cuda.FloatTensor")` and
  `torch.set_default_device("cuda")` are simulated; `set_default_tensor_type` of a CUDA type is
  refused).
- Inside a custom `torch.autograd.Function`'s forward the tensors are the CPU data: placement
  there is not checked (its outputs are shown on its inputs' device).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from simcuda.devices import RunnerConfigError, describe_runner, runner_gpus
from simcuda.ordering import ReusedMemoryRace, StreamRace
from simcuda.state import running
from simcuda.unsupported import REAL_CUDA_REACHED, SimulationUnsupported, is_refusal, reached_real_cuda

__version__ = "0.4.6"  # the distribution's version (pyproject.toml here reads it; CHANGELOG.md)

if TYPE_CHECKING:
    from simcuda.allocations import Allocation, describe
    from simcuda.context import simulated_cuda
    from simcuda.pinning import simulated_pinning
    from simcuda.pytest_plugin import phase_refusal, simulated_run_of, start_simulated_run
    from simcuda.runner import Runner, start_from_environment
    from simcuda.simulation import Simulation, current_simulation
    from simcuda.streams import StreamTable
    from simcuda.tensor import SimulatedTensor, gpu_type, gpu_vars, is_simulated, real_cpu

# Names whose modules import torch (or, for the plugin's, import this package), loaded on first
# use: this package's pytest plugin is loaded by every pytest session of an environment that has
# it installed, and costs nothing when unused.
_LAZY = {
    "Allocation": "simcuda.allocations",
    "describe": "simcuda.allocations",
    "Simulation": "simcuda.simulation",
    "current_simulation": "simcuda.simulation",
    "simulated_cuda": "simcuda.context",
    "simulated_pinning": "simcuda.pinning",
    "phase_refusal": "simcuda.pytest_plugin",
    "simulated_run_of": "simcuda.pytest_plugin",
    "start_simulated_run": "simcuda.pytest_plugin",
    "Runner": "simcuda.runner",
    "start_from_environment": "simcuda.runner",
    "StreamTable": "simcuda.streams",
    "SimulatedTensor": "simcuda.tensor",
    "gpu_type": "simcuda.tensor",
    "gpu_vars": "simcuda.tensor",
    "is_simulated": "simcuda.tensor",
    "real_cpu": "simcuda.tensor",
}
# Written out (the eager names, then _LAZY's) so that linters and type checkers see the lazy names
# imported under TYPE_CHECKING above as this package's exports; kept in step with _LAZY.
__all__ = [
    "REAL_CUDA_REACHED",
    "ReusedMemoryRace",
    "RunnerConfigError",
    "SimulationUnsupported",
    "StreamRace",
    "describe_runner",
    "is_refusal",
    "reached_real_cuda",
    "runner_gpus",
    "running",
    "Allocation",
    "describe",
    "Simulation",
    "current_simulation",
    "simulated_cuda",
    "simulated_pinning",
    "phase_refusal",
    "simulated_run_of",
    "start_simulated_run",
    "Runner",
    "start_from_environment",
    "StreamTable",
    "SimulatedTensor",
    "gpu_type",
    "gpu_vars",
    "is_simulated",
    "real_cpu",
]


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'simcuda' has no attribute {name!r}")
    return getattr(importlib.import_module(_LAZY[name]), name)
