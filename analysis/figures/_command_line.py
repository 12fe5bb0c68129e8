"""The command line every figure module shares: run files or directories in, one image out."""

import argparse
import sys

from ..runs import NotARunError, exit_on_bad_input, load_runs


def figure_main(module, description, scenario, plot, argv=None):
    """Parse ``RUN_DIR_OR_FILE... --out FIG``, load the runs of ``scenario`` and call
    ``plot(runs, out)``; exit with a one-line error when nothing usable is found, status 2
    for a run file that is not what the schema says or lacks what the figure reads."""
    name = module.rsplit(".", 1)[-1]
    parser = argparse.ArgumentParser(prog=f"python3 -m {module}", description=description)
    parser.add_argument("paths", nargs="+", metavar="RUN_DIR_OR_FILE",
                        help="directories (searched for *.h5) or run files")
    parser.add_argument("--out", required=True, metavar="FIG.png", help="output figure")
    args = parser.parse_args(argv)
    try:
        runs = [run for run in load_runs(args.paths) if run.scenario == scenario]
        if not runs:
            sys.exit(f"{name}: no {scenario} runs found in {' '.join(args.paths)}")
        plot(runs, args.out)
    except (NotARunError, FileNotFoundError, KeyError) as error:
        exit_on_bad_input(name, error)


def save_figure(fig, title, out):
    """Title the figure, lay it out, write it to ``out`` at 150 dpi and close it."""
    import matplotlib.pyplot as plt  # after the figure module chose the Agg backend

    fig.suptitle(title, fontsize=11)
    fig.tight_layout()
    fig.savefig(out, dpi=150)
    plt.close(fig)
