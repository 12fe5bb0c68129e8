"""Print the demo table for every run in a directory.

    python3 -m analysis.demo_report results/demo
"""

import argparse
import sys

from .runs import NotARunError, exit_on_bad_input, load_runs
from .tables import print_demo_table


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python3 -m analysis.demo_report",
        description="Table of formulation, mu, status, regime, max relative error, spin ratio "
                    "with its expected value, wall time and, for runs not ok, their message.")
    parser.add_argument("paths", nargs="+", metavar="RUN_DIR_OR_FILE",
                        help="directories (searched for *.h5) or run files")
    args = parser.parse_args(argv)
    try:
        runs = load_runs(args.paths)
    except (NotARunError, FileNotFoundError) as error:
        exit_on_bad_input("demo_report", error)
    if not runs:
        sys.exit(f"demo_report: no run files in {' '.join(args.paths)}")
    print_demo_table(runs)


if __name__ == "__main__":
    main()
