"""One module per figure; each is a CLI: python3 -m analysis.figures.<name> RUNS... --out FIG."""
