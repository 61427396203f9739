"""What a run leaves for people and CI, and the commands that read it. See README.md."""

from pathlib import Path

REPOSITORY = Path(__file__).resolve().parent.parent  # the checkout the reports commands run in
