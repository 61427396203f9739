"""What every page draws the same way: verdict colours, badges, the verdict table. See reports/README.md."""
