"""Comparison tables built from runs."""

import math
import sys
from collections import namedtuple

__all__ = ["DemoRow", "demo_table", "format_table", "format_demo_table", "print_demo_table"]

DemoRow = namedtuple("DemoRow", "formulation mu regime max_rel_error spin_ratio expected_spin_ratio wall_s")
DEMO_HEADER = ("formulation", "mu", "regime", "max rel. error", "spin wr/v", "expected", "wall time [s]")


def demo_table(runs):
    """One row per run, in the order given: (formulation, mu, regime, max_rel_error,
    spin_ratio, expected_spin_ratio, wall_s).

    ``mu`` comes from /params, the rest from /summary; a value the run lacks is None. The
    spin ratio ωr/v at the end of the run tells rolling (1) from slipping (2.5μcosθ/(sinθ −
    μcosθ)) independently of the displacement, which is nearly the same for μ = 0.3.
    """
    return [DemoRow(run.formulation, run.params.get("mu"), run.summary.get("regime"),
                    run.summary.get("max_rel_error"), run.summary.get("final_spin_ratio"),
                    run.summary.get("expected_spin_ratio"), run.summary.get("wall_s"))
            for run in runs]


def _cell(value, spec):
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return format(value, spec) if spec else str(value)


def format_table(header, rows, specs):
    """Aligned plain-text table: text columns left-aligned, numeric ones right-aligned."""
    cells = [[_cell(value, spec) for value, spec in zip(row, specs)] for row in rows]
    widths = [max(len(text) for text in column) for column in zip(header, *cells)]
    right = [bool(spec) for spec in specs]

    def line(texts):
        return "  ".join(text.rjust(width) if r else text.ljust(width)
                         for text, width, r in zip(texts, widths, right)).rstrip()

    return "\n".join([line(header), line(["-" * width for width in widths])]
                     + [line(texts) for texts in cells])


def format_demo_table(rows):
    """The demo table as aligned plain text."""
    return format_table(DEMO_HEADER, rows, ("", "g", "", ".3e", ".3f", ".3f", ".2f"))


def print_demo_table(runs, file=None):
    """Print the demo table of ``runs``, then one line per run whose status is not "ok"."""
    file = sys.stdout if file is None else file
    print(format_demo_table(demo_table(runs)), file=file)
    for run in runs:
        if not run.ok:
            print(f"note: {run.path.name}: {run.status}: {run.message}", file=file)
