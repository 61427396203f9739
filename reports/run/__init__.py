"""The reports of one pytest run: report.html, results.json, junit.xml. See reports/README.md."""
