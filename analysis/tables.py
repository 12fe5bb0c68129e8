"""Comparison tables built from runs."""

import math
import sys
from collections import namedtuple

__all__ = ["DemoRow", "demo_table", "format_table", "format_demo_table", "print_demo_table"]

DemoRow = namedtuple("DemoRow", "formulation mu status regime max_rel_error spin_ratio "
                                "expected_spin_ratio wall_s message")
DEMO_HEADER = ("formulation", "mu", "status", "regime", "max rel. error", "spin wr/v", "expected",
               "wall time [s]", "message")


def demo_table(runs):
    """One row per run, in the order given: (formulation, mu, status, regime, max_rel_error,
    spin_ratio, expected_spin_ratio, wall_s, message).

    ``mu`` comes from /params, ``status`` and ``message`` from the root attributes (the
    message, on one line, only for runs that are not "ok", "" otherwise), the rest from
    /summary; a value the run lacks is None. The spin ratio ωr/v at the end of the run tells
    rolling (1) from slipping (2.5μcosθ/(sinθ − μcosθ)) independently of the displacement,
    which is nearly the same for μ = 0.3.
    """
    return [DemoRow(run.formulation, run.params.get("mu"), run.status, run.summary.get("regime"),
                    run.summary.get("max_rel_error"), run.summary.get("final_spin_ratio"),
                    run.summary.get("expected_spin_ratio"), run.summary.get("wall_s"),
                    "" if run.ok else " ".join(run.message.split()))
            for run in runs]


def _fixed(digits):
    """Format spec: fixed-point with ``digits`` decimals, exponent form from 1e4 on (a
    diverged run's spin ratio can be 1e30)."""
    return lambda value: format(value, f".{digits}f" if abs(value) < 1e4 else f".{digits}e")


def _cell(value, spec):
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if callable(spec):
        return spec(value)
    return format(value, spec) if spec else str(value)


def format_table(header, rows, specs):
    """Aligned plain-text table: text columns (spec "") left-aligned, numeric ones
    right-aligned. A spec is a format spec or a function of the value returning text."""
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
    return format_table(DEMO_HEADER, rows,
                        ("", "g", "", "", ".3e", _fixed(3), _fixed(3), ".2f", ""))


def print_demo_table(runs, file=None):
    """Print the demo table of ``runs`` (a diverged run's message in its last column)."""
    file = sys.stdout if file is None else file
    print(format_demo_table(demo_table(runs)), file=file)
