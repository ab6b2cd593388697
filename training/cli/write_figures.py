"""`kselect write-figures`: write the README status table's and the model cards' figures
from the committed raw files they come from (report JSON, model sidecars).

    kselect write-figures            # rewrite every marked figure in place
    kselect write-figures --check    # change nothing; exit 1 on any figure that drifted
"""

from __future__ import annotations

from pathlib import Path

from kselect.training.figures.write import write_figures


def add_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "write-figures",
        help="write the README's and model cards' figures from committed raw files",
        description=__doc__.split("\n\n")[0],
    )
    p.add_argument("--check", action="store_true", help="change nothing; exit 1 when a written figure differs")
    p.add_argument("--root", default=".", help="the repository root (default: here)")
    p.set_defaults(func=main)


def main(args) -> int:
    problems = write_figures(Path(args.root), check=args.check)
    for line in problems:
        print(line)
    if not problems:
        print("every figure is what its raw files give" if args.check else "wrote every figure")
    return 1 if problems else 0
