"""A convergence study's figure: the errors against h or Δt, log-log, per formulation, with
the measured order in the legend (analysis/convergence.py).

    python3 -m analysis.figures.convergence RESULTS.csv --out FIG.png [--study STUDY]

The study defaults to the name of the folder holding RESULTS.csv (the sweep's folder).
"""

import argparse
import sys
from pathlib import Path

from ..convergence import STUDIES, figure
from ..sweeps import MissingColumnError, load_results


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python3 -m analysis.figures.convergence", description=__doc__.splitlines()[0])
    parser.add_argument("results", help="the study's results.csv, or its folder")
    parser.add_argument("--out", required=True, metavar="FIG.png")
    parser.add_argument("--study", choices=sorted(STUDIES), help="default: the results folder's name")
    args = parser.parse_args(argv)
    path = Path(args.results)
    study = args.study or (path.name if path.is_dir() else path.parent.name)
    if study not in STUDIES:
        sys.exit(f"convergence: {study!r} is not a study (known: {', '.join(sorted(STUDIES))}); give --study")
    try:
        figure(load_results(args.results), study, args.out)
    except (FileNotFoundError, MissingColumnError, ValueError) as error:
        sys.exit(f"convergence: {' '.join(str(error).split())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
