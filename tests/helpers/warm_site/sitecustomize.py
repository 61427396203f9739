"""Loaded at start-up by any Python whose PYTHONPATH holds this folder (the bisect self-tests put it
there for the steps `git bisect run` starts): where the warm server's address reached it
(helpers/warm_python.py, ADDRESS), the Pythons it starts fork from that server."""

import os

from tests.helpers.warm_python import ADDRESS, fork_from_the_address

if os.environ.get(ADDRESS):
    fork_from_the_address(os.environ[ADDRESS])
