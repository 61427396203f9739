"""python -m reports compare / matrix: reading several results.json files. See reports/README.md."""
