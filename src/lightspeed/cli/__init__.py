"""Command-line interface: one module per subcommand; parse, call, render."""
