"""Rendering: the only code that formats text, draws plots and writes HTML."""

from lightspeed.report.console import make_console, print_table

__all__ = ["make_console", "print_table"]
