"""What a run leaves for people and CI: results.json, report.html, junit.xml. See README.md."""
