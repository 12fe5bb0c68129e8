"""contactlab analysis: reading run files, analytic solutions, tables and figures."""

from .analytic import (ball_on_slope_displacement, ball_on_slope_regime, ball_on_slope_spin,
                       ball_on_slope_spin_ratio, ball_on_slope_velocity, rolling_threshold)
from .runs import SCHEMA, NotARunError, Run, load_runs, open_run
from .tables import DemoRow, demo_table, format_demo_table, print_demo_table

__all__ = [
    "SCHEMA", "NotARunError", "Run", "open_run", "load_runs",
    "rolling_threshold", "ball_on_slope_regime", "ball_on_slope_displacement",
    "ball_on_slope_velocity", "ball_on_slope_spin", "ball_on_slope_spin_ratio",
    "DemoRow", "demo_table", "format_demo_table", "print_demo_table",
]
