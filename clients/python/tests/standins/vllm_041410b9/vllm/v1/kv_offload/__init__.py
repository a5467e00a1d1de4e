"""Stand-in package: see tests/standins/README.md."""
