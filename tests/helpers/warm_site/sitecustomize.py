"""Loaded at start-up by any Python whose PYTHONPATH holds this folder (the bisect self-tests put it
there for the steps `git bisect run` starts): where the warm server's address reached it
(helpers/warm_python.py, ADDRESS), the Pythons it starts fork from that server."""

import os

if os.environ.get("HARNESS_WARM_PYTHON"):
    from tests.helpers.warm_python import fork_from_the_address

    fork_from_the_address(os.environ["HARNESS_WARM_PYTHON"])
