"""`kselect` command line: one small module per subcommand, imported only when used.

Each subcommand module exposes `add_parser(subparsers)` that registers its parser and sets
`func(args) -> int`, which parses nothing else: it calls the logic module's function with
typed arguments and prints what it returns (progress on stderr: output.py). Bad input raises a `ValueError` subclass whose message names the
problem; it is printed as `kselect: error: ...` with exit status 2, never a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import logging
import sys

# name -> (module, one-line help). Order is the order `kselect --help` lists them.
SUBCOMMANDS = {
    "doctor": (
        "kselect.training.cli.doctor",
        "what kselect will do here: card, model, versions, cache, what it decides",
    ),
    "shapes": ("kselect.training.cli.shapes", "list or export the named GEMM workload sets"),
    "collect": ("kselect.training.cli.collect", "measure every candidate of every shape on a GPU"),
    "collect-grouped": (
        "kselect.training.cli.collect_grouped",
        "measure Inductor's grouped-mm choices on MoE expert layers",
    ),
    "collect-epilogue": (
        "kselect.training.cli.collect_epilogue",
        "time GEMM + epilogue functions per pinned candidate (the epilogue block's labels)",
    ),
    "grouped-eval": (
        "kselect.training.cli.grouped_eval",
        "fit the grouped-GEMM model; score its picks on unseen MoE shapes",
    ),
    "dataset": ("kselect.training.cli.dataset", "summarise, validate and compact a measured dataset"),
    "retime": ("kselect.training.cli.retime", "re-time a dataset's best candidates as Inductor's own kernels"),
    "faithfulness": (
        "kselect.training.cli.faithfulness",
        "collector time vs compiled-program time vs Inductor autotune",
    ),
    "compile-cost": (
        "kselect.training.cli.compile_cost",
        "time Triton candidates' compiles on this CPU; fit their model",
    ),
    "train": ("kselect.training.cli.train", "train the gradient-boosted cost model"),
    "train-reach": ("kselect.training.cli.train_reach", "train verify's budget model beside a cost model"),
    "evaluate": ("kselect.training.cli.evaluate", "held-out accuracy of a model on a dataset"),
    "report": ("kselect.training.cli.report", "write an accuracy report with plots"),
    "write-figures": (
        "kselect.training.cli.write_figures",
        "write the README's and model cards' figures from committed raw files",
    ),
    "retrain": ("kselect.training.cli.retrain", "a cost model for a new GPU in one resumable command"),
    "amd": ("kselect.training.cli.amd", "AMD backend-winner model over tuned-GEMM tables"),
    "flydsl": ("kselect.training.cli.flydsl", "compile FlyDSL GEMM candidates for gfx942/gfx950"),
    "export-lookup-table": (
        "kselect.training.cli.lookup_export",
        "write kselect's decisions as Inductor's template lookup table",
    ),
    "import-lookup-table": (
        "kselect.training.cli.lookup_import",
        "read an Inductor lookup table's timed configs into a dataset",
    ),
    "export-measured-picks": (
        "kselect.training.cli.measured_picks",
        "write a card's measured picks per GEMM from its datasets (predict's exact hits)",
    ),
    "bench": ("kselect.training.cli.bench", "stock max-autotune vs kselect: tuning time and kernel speed"),
}


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The `kselect` parser. With `argv` (what main runs) only the verb it names is built
    from its module; every other verb is listed by name and help alone, so `--help` works on
    an install without the training extra. With None every verb's module builds its parser."""
    parser = argparse.ArgumentParser(
        prog="kselect", description="Learned cost-model guided GEMM kernel selection for TorchInductor."
    )
    parser.add_argument("-v", "--verbose", action="count", default=0, help="more log output")
    parser.add_argument(
        "-q",
        "--quiet",
        action="store_true",
        help="no progress on stderr (bars with an ETA, progress lines); results still print",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    add_subcommands(sub, SUBCOMMANDS, argv)
    return parser


def add_subcommands(sub, table: dict[str, tuple[str, str]], argv: list[str] | None, verb: str = "kselect") -> None:
    """Register under `sub` each entry of `table` (name -> (module, help)) whose module this
    install has. The verb `argv` names (its first word that is a name in `table`; every verb
    when argv is None) comes from its module's add_parser, the others by name and help only,
    without importing their modules. A module that holds a group of verbs (`VERBS`, as
    bench.py) gets argv too, to build only the verb run. A verb whose module needs a missing
    training dependency raises MissingExtra, naming the extra."""
    wanted = None if argv is None else next((a for a in argv if a in table), None)
    for name, (module, help_text) in table.items():
        if importlib.util.find_spec(module) is None:
            continue
        if argv is not None and name != wanted:
            sub.add_parser(name, help=help_text)
            continue
        try:
            verb_module = importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name not in TRAINING_DEPENDENCIES:
                raise
            raise MissingExtra(
                f"`{verb} {name}` needs the train extra ({exc.name} is not installed): pip install 'kselect[train]'"
            ) from None
        if hasattr(verb_module, "VERBS"):
            verb_module.add_parser(sub, argv)
        else:
            verb_module.add_parser(sub)


# Modules of the [train] extra: without them only the runtime plug-in works.
TRAINING_DEPENDENCIES = ("pandas", "pyarrow", "sklearn", "scipy", "xgboost", "matplotlib", "tqdm")


class MissingExtra(ImportError):
    """A subcommand's module needs a dependency of an extra that is not installed."""


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        parser = build_parser(argv)
    except MissingExtra as exc:
        print(f"kselect: error: {exc}", file=sys.stderr)
        return 2
    args = parser.parse_args(argv)
    args.argv = argv  # reports quote the exact command that produced them
    logging.basicConfig(level=logging.WARNING - 10 * min(args.verbose, 2), format="%(levelname)s %(name)s: %(message)s")
    if not getattr(args, "func", None):
        parser.print_help()
        return 0 if args.command is None else 2
    try:
        return int(args.func(args) or 0)
    except (ValueError, FileNotFoundError) as exc:
        print(f"kselect: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
