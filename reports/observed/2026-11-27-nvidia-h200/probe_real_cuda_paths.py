"""Which C++ paths reach the real CUDA from inside simulated_cuda() on a one-GPU machine, and what
they raise: before and after the real CUDA was started in the process (the second call's log)."""

import threading
import traceback

import torch
import torch.nn.functional as F
import torchvision

from simcuda import simulated_cuda


def show(name, call):
    try:
        out = call()
        print(f"--- {name}: returned {type(out).__name__} {getattr(out, 'device', '')}")
    except BaseException as error:  # noqa: BLE001 - a probe prints whatever was raised
        frames = traceback.extract_tb(error.__traceback__)[-6:]
        print(f"--- {name}: {type(error).__module__}.{type(error).__name__}: {str(error)[:240]!r}")
        for frame in frames:
            print(f"      {frame.filename.split('site-packages/')[-1]}:{frame.lineno} {frame.name}")


def in_thread():
    errors = []

    def work():
        try:
            torch.zeros(2, device="cuda:1")
        except BaseException as error:  # noqa: BLE001
            errors.append(error)

    thread = threading.Thread(target=work)
    thread.start()
    thread.join()
    if errors:
        raise errors[0]


class Wrapped(torch.Tensor):  # a PyG-like subclass: __torch_function__ of its own
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        return super().__torch_function__(func, types, args, kwargs or {})


def attention(x):
    q = x.as_subclass(Wrapped)
    w = torch.rand(3 * 8, 8, device=x.device)
    return F.multi_head_attention_forward(q, q, q, 8, 2, w, torch.zeros(24, device=x.device), None, None, False, 0.0,
                                          torch.rand(8, 8, device=x.device), torch.zeros(8, device=x.device))


for when in ("real CUDA not started", "real CUDA started on cuda:0"):
    if when.endswith("cuda:0"):
        torch.zeros(1, device="cuda:0")
    print(f"=== {when}")
    with simulated_cuda():
        x = torch.rand(1, 3, 16, 16, device="cuda:1")
        jpeg = torchvision.io.encode_jpeg((x[0].cpu() * 255).to(torch.uint8))
        show("encode_jpeg on cuda:1", lambda: torchvision.io.encode_jpeg((x[0] * 255).to(torch.uint8)))
        show("decode_jpeg device=cuda", lambda: torchvision.io.decode_jpeg(jpeg, device="cuda"))
        show("factory in another thread", in_thread)
        show("multi_head_attention_forward, subclass", lambda: attention(torch.rand(4, 2, 8, device="cuda:1")))
        show("pinned host copy", lambda: torch.empty(8, pin_memory=True).copy_(torch.ones(8, device="cuda:1"), non_blocking=True))
