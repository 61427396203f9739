"""The position encodings the suite compiles: sam2's own when installed, else a stand-in.

The stand-in keeps SAM2's caching pattern (one sine map per (H, W) in a dict, filled by a call)
in both of sam2's shapes: `fixed=False` is 0.4.1 (filled lazily by the first call, which under
torch.compile is the compiled call, so the dict keeps graph-owned memory, and returned as is
whatever device the caller is on); `fixed=True` is 1.1.0 / PR 486 (filled eagerly on CUDA at
construction, and moved to the caller's device on every hit).
"""

from __future__ import annotations

import copy
import math

import torch
from torch import nn

# sam2 1.1.0's warm-up defaults: image_size 1024, strides (4, 8, 16, 32).
SAM2_WARM_SIZES = tuple((1024 // stride, 1024 // stride) for stride in (4, 8, 16, 32))
# The suite's feature width: sam2's PositionEmbeddingSine(num_pos_feats) gives this many channels.
CHANNELS = 16
# Frame sizes (square, RGB): the same size, a size change, back. They equal the feature sizes
# sam2 1.1.0 warms its cache for (1024 // 32, 1024 // 16), as SAM2's image encoder would meet.
FRAME_SIZES = (32, 32, 32, 64, 64, 32, 32)
SAM2_INSTALL_HINT = "SAM2_BUILD_CUDA=0 pip install -e '.[sam2]' (sam2, hydra-core, iopath)"


def sine_position_map(channels: int, height: int, width: int, device: torch.device | str) -> torch.Tensor:
    """A (1, channels, height, width) normalised sine/cosine position map, as in SAM2 / DETR."""
    half = channels // 2
    ys = torch.arange(1, height + 1, dtype=torch.float32, device=device) / height * 2 * math.pi
    xs = torch.arange(1, width + 1, dtype=torch.float32, device=device) / width * 2 * math.pi
    steps = torch.arange(half, dtype=torch.float32, device=device)
    frequencies = 10000 ** (2 * (steps // 2) / half)
    along_y = _interleave_sin_cos(ys[:, None] / frequencies)  # (H, half)
    along_x = _interleave_sin_cos(xs[:, None] / frequencies)  # (W, half)
    grid = torch.cat((along_y[:, None, :].expand(height, width, half), along_x[None].expand(height, width, half)), dim=2)
    return grid.permute(2, 0, 1)[None]


def _interleave_sin_cos(angles: torch.Tensor) -> torch.Tensor:
    return torch.stack((angles[:, 0::2].sin(), angles[:, 1::2].cos()), dim=2).flatten(1)


class CachedSinePosition(nn.Module):
    """SAM2's PositionEmbeddingSine caching pattern in a few lines (see the module docstring)."""

    def __init__(self, channels: int, fixed: bool) -> None:
        super().__init__()
        self.channels = channels
        self.fixed = fixed
        self.cache: dict[tuple[int, int], torch.Tensor] = {}
        if fixed and torch.cuda.is_available():
            for size in SAM2_WARM_SIZES:
                self.cache[size] = self.encode(*size, device="cuda")[0]

    def encode(self, height: int, width: int, device: torch.device | str) -> torch.Tensor:
        return sine_position_map(self.channels, height, width, device)

    @torch.no_grad()
    def forward(self, features: torch.Tensor) -> torch.Tensor:
        batch, key = features.shape[0], (features.shape[-2], features.shape[-1])
        if key in self.cache:
            cached = self.cache[key].to(features.device) if self.fixed else self.cache[key]
            return cached[None].repeat(batch, 1, 1, 1)
        position = self.encode(*key, device=features.device)
        self.cache[key] = position[0]
        return position.repeat(batch, 1, 1, 1)


def sam2_position_encoding_class() -> type[nn.Module] | None:
    """sam2's PositionEmbeddingSine, or None when sam2 (or hydra, which `import sam2` needs) is absent."""
    try:
        from sam2.modeling.position_encoding import PositionEmbeddingSine
    except ImportError:
        return None
    return PositionEmbeddingSine


def position_encoding(channels: int) -> tuple[nn.Module, str]:
    """The encoding the suite compiles, and what it is: sam2's when installed, else the stand-in
    in sam2's fixed shape (with sam2 absent no release can be placed, so a stand-in with the
    0.4.1 shape would read as a regression; the 0.4.1 shape is exercised by tests/)."""
    sam2_class = sam2_position_encoding_class()
    if sam2_class is not None:
        return sam2_class(channels), "sam2.modeling.position_encoding.PositionEmbeddingSine"
    return CachedSinePosition(channels, fixed=True), "stand-in with sam2 1.1.0's cache (sam2 not installed)"


def frames(device: torch.device | str) -> list[torch.Tensor]:
    return [torch.rand(1, 3, size, size, device=device) for size in FRAME_SIZES]


class FrameEncoder(nn.Module):
    """The smallest encoder with SAM2's shape: features plus a cached position map. The features are
    a 1x1 convolution written as a weighted sum of the colour planes, pointwise work inductor fuses:
    no matrix product is left for max-autotune to benchmark. With the convolution, on an H200 with a
    cold cache, the two max-autotune tests took 23 s of the folder's 33 s and reduce-overhead's 5 s
    (the saving is argued from that, not yet measured). The bug lives in the position cache."""

    def __init__(self, position: nn.Module, channels: int) -> None:
        super().__init__()
        bound = 3**-0.5  # nn.Conv2d's own initial range for three input planes
        self.weight = nn.Parameter(torch.empty(channels, 3).uniform_(-bound, bound))
        self.bias = nn.Parameter(torch.empty(channels).uniform_(-bound, bound))
        self.position = position

    def forward(self, frames: torch.Tensor) -> torch.Tensor:
        features = (frames.unsqueeze(1) * self.weight[None, :, :, None, None]).sum(2) + self.bias[None, :, None, None]
        return features + self.position(features)


def encoder_and_eager_twin(position: nn.Module, device: torch.device | str) -> tuple[nn.Module, nn.Module]:
    """The encoder to run and an untouched copy for eager references: the copy is taken before
    any call, so the run under test never fills its cache."""
    encoder = FrameEncoder(position, CHANNELS).to(device).requires_grad_(False).eval()
    return encoder, copy.deepcopy(encoder)
