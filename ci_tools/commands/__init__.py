"""One module per `ci-tools` command: `configure(parser)` and `run(args) -> exit code`."""
