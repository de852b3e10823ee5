"""Studies: one-off measurements behind a decision (see README.md). Run from the repository root as
modules, for example `python3 -m studies.supersede`."""
