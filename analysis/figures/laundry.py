"""Laundry: a second cloth in the cloth bag, held until two corners release (issue 21).

    python3 -m analysis.figures.laundry RUN_DIR_OR_FILES... --out laundry.png

The box-bagging figure (analysis.figures.box_bagging) for the laundry's runs: the laundry
cloth's centre of mass and the bag's lowest vertex over time, the release dotted.
"""

from ._command_line import figure_main
from .box_bagging import plot

SCENARIO = "laundry"


def main(argv=None):
    figure_main("analysis.figures.laundry", __doc__.splitlines()[0], SCENARIO, plot, argv)


if __name__ == "__main__":
    main()
