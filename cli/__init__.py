"""The `fitsync` command line: one module per command, each calling the functions of its concern."""
