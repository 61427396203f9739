"""python -m reports scan: each release installed and its bugs' suites run. See reports/README.md."""
