"""python -m reports acceptance: the GPU acceptance run's two steps and its summary. See reports/README.md."""
