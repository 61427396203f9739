"""Autograd on the simulated device: backward, `torch.autograd.grad`, hooks, custom Functions and
an optimizer step give the CPU run's gradients, on the simulated device, and never ask the CUDA
runtime for anything (the rehearsal in test_gpu_runner_rehearsal.py runs the suites with the real
CUDA device guard in force)."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from simcuda import is_simulated, real_cpu, simulated_cuda

DEVICE = torch.device("cuda:1")


class Doubled(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        return grad * 3  # not the true derivative: only a real call of this backward gives 3


def model() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.ReLU(), nn.Flatten(), nn.Linear(4 * 8 * 8, 2))


def loss_of(net: nn.Module, image: torch.Tensor) -> torch.Tensor:
    out = net(image)
    return (out[:, 0] * Doubled.apply(out[:, 1])).sum() + image[0, :, 2:5, 1].pow(2).sum()


def gradients(device: torch.device) -> tuple[torch.Tensor, list[torch.Tensor], list[torch.Tensor]]:
    net = model().to(device)
    image = torch.rand(2, 3, 8, 8, generator=torch.Generator().manual_seed(1)).to(device).requires_grad_()
    loss_of(net, image).backward()
    grads = [p.grad for p in net.parameters()]
    optimizer = torch.optim.SGD(net.parameters(), lr=0.1)
    optimizer.step()
    return image.grad, grads, [p.detach() for p in net.parameters()]


def on_cpu(tensors: list[torch.Tensor]) -> list[torch.Tensor]:
    return [real_cpu(t) for t in tensors]


def test_backward_and_an_optimizer_step_equal_the_cpu_run() -> None:
    cpu_image_grad, cpu_grads, cpu_params = gradients(torch.device("cpu"))
    with simulated_cuda(2):
        image_grad, grads, params = gradients(DEVICE)
        assert image_grad.device == DEVICE and all(g.device == DEVICE for g in grads) and is_simulated(grads[0])
    assert torch.allclose(real_cpu(image_grad), cpu_image_grad)
    assert all(torch.allclose(a, b) for a, b in zip(on_cpu(grads), cpu_grads))
    assert all(torch.allclose(a, b) for a, b in zip(on_cpu(params), cpu_params))


def test_autograd_grad_hooks_retain_grad_and_double_backward() -> None:
    with simulated_cuda(2):
        x = torch.tensor([1.0, 2.0, 3.0], device=DEVICE, requires_grad=True)
        assert x.requires_grad and x.is_leaf and x.grad is None
        y = x * x
        y.retain_grad()
        seen = []
        y.register_hook(lambda grad: seen.append(grad.device) or grad * 10)
        (first,) = torch.autograd.grad(y.sum(), x, create_graph=True)
        assert first.device == DEVICE and torch.equal(real_cpu(first), torch.tensor([20.0, 40.0, 60.0]))
        first.sum().backward()  # the second derivative: d/dx of 20x is 20
        assert torch.equal(real_cpu(x.grad), torch.tensor([20.0, 20.0, 20.0])) and seen == [DEVICE]
        assert y.grad_fn is not None and not y.is_leaf
        z = x.detach()
        assert not z.requires_grad and z.device == DEVICE


def test_backward_from_a_loss_moved_to_the_cpu_reaches_the_simulated_leaf() -> None:
    with simulated_cuda(2):
        x = torch.ones(3, device=DEVICE, requires_grad=True)
        (x * 2).sum().cpu().backward()
        assert x.grad.device == DEVICE and torch.equal(real_cpu(x.grad), torch.full((3,), 2.0))


def test_no_grad_records_nothing() -> None:
    with simulated_cuda(2):
        x = torch.ones(3, device=DEVICE, requires_grad=True)
        with torch.no_grad():
            y = x * 2
        assert not y.requires_grad and y.grad_fn is None


def test_a_cpu_leaf_moved_to_the_device_or_meeting_it_gets_its_gradient() -> None:
    """A CPU leaf that requires grad, moved onto the simulated device or (a 0-dim parameter)
    multiplied with a simulated tensor: autograd records it on the CPU data, as kornia's
    `nn.Parameter` degrees do, instead of asking CUDA for the stream of a CUDA-device node."""
    weight, scale = torch.tensor([1.0, 2.0], requires_grad=True), torch.tensor(3.0, requires_grad=True)
    with simulated_cuda(2):
        x = torch.ones(2, device=DEVICE)
        moved = weight.to(DEVICE)
        assert is_simulated(moved) and moved.requires_grad and moved.grad_fn is not None
        (moved * x * scale).pow(2).sum().backward()
    assert weight.grad.tolist() == [18.0, 36.0] and scale.grad.item() == 30.0


def test_the_private_grad_attribute_is_the_gradient() -> None:
    """`param._grad` (kornia's tests read it) is `param.grad`, as on any tensor."""
    with simulated_cuda(2):
        weight = torch.ones(3, device=DEVICE, requires_grad=True)
        (weight * 2).sum().backward()
        assert weight._grad is weight.grad and real_cpu(weight._grad).tolist() == [2.0, 2.0, 2.0]
        weight._grad = None
        assert weight.grad is None


LIKE_FACTORIES = {
    "empty_like": lambda x, **kw: torch.empty_like(x, **kw),
    "zeros_like": lambda x, **kw: torch.zeros_like(x, **kw),
    "ones_like": lambda x, **kw: torch.ones_like(x, **kw),
    "full_like": lambda x, **kw: torch.full_like(x, 2.0, **kw),
    "rand_like": lambda x, **kw: torch.rand_like(x, **kw),
    "randn_like": lambda x, **kw: torch.randn_like(x, **kw),
    "randint_like": lambda x, **kw: torch.randint_like(x, 10, **kw),
    "randint_like low": lambda x, **kw: torch.randint_like(x, 2, 10, **kw),
}


@pytest.mark.parametrize("asked", [{}, {"requires_grad": True}, {"requires_grad": False}], ids=["default", "grad", "no grad"])
@pytest.mark.parametrize("make", LIKE_FACTORIES.values(), ids=LIKE_FACTORIES.keys())
def test_a_like_factory_of_a_tensor_that_requires_grad_is_a_leaf_as_on_the_cpu(make, asked: dict) -> None:
    """torch's bindings set the result's requires_grad themselves: randint_like of a tensor that
    requires grad once came out requiring grad, with an unimplemented derivative that backward
    then raised on (PyTorch Geometric's sparse cross entropy)."""
    x = torch.rand(3, requires_grad=True)
    expected = make(x, **asked)
    with simulated_cuda():
        made = make(x.detach().to(DEVICE).requires_grad_(), **asked)
        assert (made.requires_grad, made.is_leaf, made.grad_fn, made.dtype) == (expected.requires_grad, True, None, expected.dtype)
        assert made.device == DEVICE
        if made.requires_grad:
            (made * 2).sum().backward()
            assert torch.equal(real_cpu(made.grad), torch.full((3,), 2.0))


def test_backward_hooks_see_gradients_on_the_tensors_device() -> None:
    """nn.Module's full backward hooks register on autograd nodes: through a simulated tensor's
    `grad_fn` they saw the CPU data's gradients (MONAI 1.5.0's GradCAM kept one and met its cuda:0
    activations: "found at least two devices, cuda:0 and cpu"). A hook's returned gradients take
    effect, as on any device."""

    def body(device: torch.device) -> tuple:
        seen = []
        layer = torch.nn.Linear(3, 2).to(device)
        layer.register_full_backward_hook(lambda module, grad_in, grad_out: seen.append((grad_in[0].device, grad_out[0].device)))
        x = torch.arange(12.0, device=device).reshape(4, 3).requires_grad_()
        y = layer(x) * 3
        y.grad_fn.register_prehook(lambda grad_out: (grad_out[0] * 2,))
        y.sum().backward()
        assert seen == [(device, device)], seen
        return (x.grad,)

    with torch.random.fork_rng():
        torch.manual_seed(0)
        expected = body(torch.device("cpu"))
    with torch.random.fork_rng(), simulated_cuda(2, shared_generator=True):
        torch.manual_seed(0)
        got = tuple(real_cpu(value) for value in body(torch.device("cuda:1")))
    torch.testing.assert_close(got, expected)


def test_a_simulated_grad_fn_is_a_node_that_torchs_graph_functions_take() -> None:
    """The node a simulated tensor's `grad_fn` answers is an `autograd.graph.Node`, the same object
    at each read; the nodes it leads to show their hooks' gradients on the device too; and torch's
    functions that hand a tensor's node to C++ (a gradient edge, a multi-grad hook's check) take it."""
    from torch.autograd.graph import Node, get_gradient_edge, register_multi_grad_hook

    with simulated_cuda(2):
        weight = torch.rand(3, device="cuda:1", requires_grad=True)
        y = weight * 2
        loss = (y * y).sum()
        assert isinstance(y.grad_fn, Node) and y.grad_fn is y.grad_fn
        seen = []
        accumulate = weight.view_as(weight).grad_fn.next_functions[0][0]
        accumulate.register_prehook(lambda grad_out: seen.append(grad_out[0].device))
        register_multi_grad_hook((weight, y), lambda grads: seen.append("all gradients ready"), mode="all")
        (edge_grad,) = torch.autograd.grad(loss, get_gradient_edge(y), retain_graph=True)
        loss.backward()
        assert sorted(map(str, seen)) == ["all gradients ready", "all gradients ready", "cuda:1"], seen  # grad, then backward
        torch.testing.assert_close(real_cpu(edge_grad), 2 * real_cpu(y).detach())
