"""pytest plugin for a peer's tests written before torch deprecated TorchScript: torch 2.14 warns
"`torch.jit.script` is deprecated" with a FutureWarning, which a module's own
`filterwarnings("error")` turns into a failure (torchvision's test_transforms_v2.py ignores only
the DeprecationWarning earlier torch raised). Appended to each module's own marks, so it is
applied after (and so ahead of) the module's "error" filter; nothing else changes."""

from __future__ import annotations

import pytest

IGNORE = r"ignore:`torch\.jit\.(script|trace)` is deprecated:FutureWarning"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for module in {id(module): module for item in items if (module := item.getparent(pytest.Module)) is not None}.values():
        module.add_marker(pytest.mark.filterwarnings(IGNORE), append=True)
