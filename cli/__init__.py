"""The `fitsync` command line: one module per command (or command group), each calling the functions of its concern;
what a command shows (tables, progress, a query's result) in modules named for it. Heavy imports (Dagster, Polars,
the sandbox) happen inside the commands that need them, so `fitsync --help` starts fast.

May import: client, state, warehouse, webhooks, sync, resources, assets, pipelines, sandbox.
"""
