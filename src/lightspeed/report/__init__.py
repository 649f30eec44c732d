"""Rendering: the only code that formats text, draws plots and writes HTML."""

from lightspeed.report.console import make_console, print_table
from lightspeed.report.regression import print_gate

__all__ = ["make_console", "print_gate", "print_table"]
