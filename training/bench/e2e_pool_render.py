"""The README.md of a pooled report: per setup the variants' medians, what the GPU did, the
comparisons with how sure each is, the run-effects fit, the pairs and the targets."""

from __future__ import annotations

from kselect.training.bench.e2e_pool_load import SETTINGS_THAT_MATTER
from kselect.training.bench.e2e_pool_stats import CONFIDENCE
from kselect.training.bench.e2e_spec import ORDER
from kselect.training.bench.e2e_tables import graph_gap_ms


def distinguishing_settings(setups: list[dict]) -> list[dict]:
    """Per setup, the bench settings in which it differs from another setup of the same GPU,
    model and workload (e.g. verify's k), so that two headings alike tell which is which;
    {} for a setup alone of its kind."""

    def kind(st):  # the setup but its bench settings
        return {k: v for k, v in st.items() if k != "settings"}

    out = []
    for st in setups:
        others = [o for o in setups if o is not st and kind(o) == kind(st)]
        keys = [k for k in SETTINGS_THAT_MATTER if any(o["settings"].get(k) != st["settings"].get(k) for o in others)]
        out.append({k: st["settings"].get(k) for k in keys})
    return out


def _fmt(x, spec: str) -> str:
    return "-" if x is None else format(x, spec)


def _state_lines(variants: list[dict]) -> list[str]:
    """The GPU-only step beside what may move it on the same kernels: the replay time outside
    the profiled kernels and the recorded GPU state (medians over processes); [] without them."""
    rows = [v for v in variants if v.get("device_state") or graph_gap_ms(v) is not None]
    if not rows:
        return []

    def at(v, moment, field, spec, per=1.0):  # per: a unit's size (1e3: mW -> W, mJ -> J)
        x = ((v.get("device_state") or {}).get(moment) or {}).get(field)
        return _fmt(None if x is None else x / per, spec)

    # --warmup-s runs read the state once warm too: a column part of its own only where one did
    warm = any("after_warmup" in (v.get("device_state") or {}) for v in rows)

    def moments(*names):
        return tuple(m for m in names if warm or m != "after_warmup")

    clock_moments = moments("before_steps", "after_warmup", "during_replays", "after_replays")
    temp_moments = moments("before_steps", "after_warmup", "after_replays")
    w = " / warm" if warm else ""
    lines = [
        "",
        "GPU-only step and what may move it on the same kernels (medians; the step over all the "
        "variant's processes, each other column over those that recorded it -- runs before the "
        "reports/2026-12-04-prefill-counterbalanced-decode-compile-by-k did not; before = before the timed steps, during = sampled while the graph "
        "replays were timed (runs from 2026-12-04 on), after = after the replays; energy per step from the "
        "energy counter's moves (runs from 2026-12-04 on)" + ("; warm = after --warmup-s" if warm else "") + "):",
        "",
        f"| variant | GPU-only step ms | replay minus kernels ms | reserved GiB, before | SM MHz, before{w} / during "
        f"/ after | temperature C, before{w} / after | power W, during / after | energy J per replayed step |",
        "| --- |" + " --- |" * 7,
    ]

    for v in rows:
        clocks = " / ".join(at(v, m, "sm_clock_mhz", ".0f") for m in clock_moments)
        temps = " / ".join(at(v, m, "temperature_c", ".0f") for m in temp_moments)
        lines.append(
            f"| {v['variant']} | {_fmt(v.get('graph_step_ms'), '.3f')} | {_fmt(graph_gap_ms(v), '.3f')} | "
            f"{at(v, 'before_steps', 'reserved_gb', '.2f')} | {clocks} | {temps} | "
            f"{at(v, 'during_replays', 'power_mw', '.0f', 1e3)} / {at(v, 'after_replays', 'power_mw', '.0f', 1e3)} | "
            f"{at(v, 'during_replays', 'energy_mj_per_step', '.2f', 1e3)} |"
        )
    return lines


def _effect_lines(effects: dict) -> list[str]:
    """The run-effects table: each variant's eager and GPU-only step over the baseline's."""
    if not effects:
        return []
    any_fit = next(iter(effects.values()))
    base = any_fit["baseline"]
    by_variant: dict = {}
    for what, fit in effects.items():
        for e in fit["effects"]:
            by_variant.setdefault(e["variant"], {})[what] = e

    def cell(e):
        if e is None:
            return "-"
        se = "" if e["se"] is None else f" +- {e['se']:.3f}"
        return f"{e['diff']:+.3f}{se}" + ("" if e["t"] is None else f" (t = {e['t']:+.1f})")

    runs = any_fit["runs"]
    n_base = any_fit["baseline_processes"]
    lines = [
        "",
        f"Each variant's step against {base}'s ({n_base} process{'es' if n_base > 1 else ''}), with one term "
        f"per run (least squares over every process of the setup, {runs} run{'s' if runs > 1 else ''}; ms over "
        f"{base}'s, +- standard error; the residual is the spread between processes of one variant in one run):",
        "",
        "| variant | processes | eager step | GPU-only step |",
        "| --- | --- | --- | --- |",
    ]
    for v in sorted(by_variant, key=ORDER.index):
        got = by_variant[v]
        n = next(iter(got.values()))["processes"]
        lines.append(f"| {v} | {n} | {cell(got.get('step'))} | {cell(got.get('gpu'))} |")

    def resid(what):
        fit = effects.get(what)
        return "-" if fit is None or fit["residual_sd"] is None else f"sd {fit['residual_sd']:.3f} ({fit['dof']} dof)"

    lines.append(f"| residual | - | {resid('step')} | {resid('gpu')} |")
    return lines


def _sequence_lines(gaps: list[dict]) -> list[str]:
    """Where a replay gap sits in the step's kernel sequence; [] without sequences."""
    if not gaps:
        return []
    lines = [
        "",
        "The replays' kernels position by position (median per position over processes; us per "
        "step, variant minus baseline; the swap is the stretch whose kernel names differ, lined up from "
        "both ends, with its kernel counts; a fused prologue shortens one side):",
        "",
        "| variant vs baseline | processes | kernels per step | GPU-only step diff | kernels diff | before "
        "the swap | at the swap | after it | largest positions |",
        "| --- |" + " --- |" * 8,
    ]
    for g in gaps:
        n = g["positions"]
        kernels = f"{n[0]} vs {n[1]}" if isinstance(n, list) else str(n)
        swap = _fmt(g.get("swap_us"), "+.1f")
        if g.get("swap_kernels"):
            swap += f" ({g['swap_kernels'][0]} vs {g['swap_kernels'][1]} kernels)"
        top = "; ".join(f"#{i} {mine[:40]} {a - b:+.1f}" for i, mine, _, a, b in g["top"])
        lines.append(
            f"| {g['variant']} vs {g['baseline']} | {g['processes'][0]} vs {g['processes'][1]} | "
            f"{kernels} | {_fmt(g['gpu_step_diff_us'], '+.1f')} | {g['total_us']:+.1f} | "
            f"{_fmt(g.get('before_swap_us'), '+.1f')} | {swap} | "
            f"{_fmt(g.get('after_swap_us'), '+.1f')} | {top} |"
        )
    return lines


def render(report: dict) -> str:
    lines = [
        "# `bench e2e` runs, pooled",
        "",
        f"Command: `{report['command']}`",
        "",
        f"{len(report['sources'])} results.json files pooled; processes pool only with others of the "
        "same setup (GPU, model, workload, dtype, batch, sequence and the bench settings that change "
        "a variant or its timing). Medians over processes; kselect variants' compile includes their "
        "one-time model load (tables and targets: median compile + median load, as `bench e2e` "
        "judges; comparisons: each process's compile + load). Comparisons: ratio of medians, a "
        f"percentile-bootstrap {CONFIDENCE:.0%} interval, and the one-sided Mann-Whitney U p-value for "
        '"slower than its baseline" (small: a real slow-down; large: none shown).',
        "",
    ]
    lines += [f"- left out: {s}" for s in report["skipped"]]
    apart = distinguishing_settings([s["setup"] for s in report["setups"]])
    for s, tell in zip(report["setups"], apart):
        st = s["setup"]
        lines += [
            "",
            f"## {st['model']}, {st['workload']} ({st['gpu']}, {st['dtype']}, batch {st['batch']}, "
            f"seq {st['seq']}): {s['processes']} processes"
            + (f" -- {', '.join(f'{k} {v}' for k, v in tell.items())}" if tell else ""),
            "",
        ]
        code = ", ".join(f"`{c}` ({n} file{'s' if n > 1 else ''})" for c, n in s["code"].items())
        lines += [
            f"kselect code: {code}"
            + (
                " -- **mixed**: the processes ran different kselect code; pool like with like where it matters"
                if len(s["code"]) > 1
                else ""
            ),
            "",
        ]
        if s["not_ok"]:
            lines += ["Not ok, left out: " + ", ".join(f"{v} {n}" for v, n in s["not_ok"].items()), ""]
        lines += [
            "| variant | processes | compile s (+ load) | compile CPU s (+ load) | step ms (min-max of processes) "
            "| GPU-only step ms | GEMM kernel ms per step | results within tolerance | files |",
            "| --- |" + " --- |" * 8,
        ]
        for v in s["variants"]:
            load = v.get("kselect_load_s") or 0.0
            gemm = ((v.get("kernel_time") or {}).get("ms_per_step") or {}).get("gemm")
            step = (
                f"{v['step_ms']:.3f} ({v['step_ms_p10']:.3f}-{v['step_ms_p90']:.3f})"
                if v["processes"] > 1
                else _fmt(v.get("step_ms"), ".3f")
            )
            cpu = None if v.get("compile_cpu_s") is None else v["compile_cpu_s"] + load
            lines.append(
                f"| {v['variant']} | {v['processes']} | {v['compile_s'] + load:.2f} | "
                f"{_fmt(cpu, '.2f')} | {step} | {_fmt(v.get('graph_step_ms'), '.3f')} | "
                f"{_fmt(gemm, '.3f')} | {v['results_ok']} of {v['processes']} | {len(v['sources'])} |"
            )
        lines += _state_lines(s["variants"])
        lines += _sequence_lines(s.get("sequence_gaps") or [])
        if s["comparisons"]:
            lines += [
                "",
                f"| comparison | processes | ratio of medians | {CONFIDENCE:.0%} interval | p (slower) |",
                "| --- | --- | --- | --- | --- |",
            ]
            for c in s["comparisons"]:
                ci = "-" if c["interval"] is None else f"{c['interval'][0]:.3f}-{c['interval'][1]:.3f}"
                lines.append(
                    f"| {c['comparison']} | {c['n'][0]} vs {c['n'][1]} | {c['ratio']:.3f} | {ci} | "
                    f"{_fmt(c['p_slower'], '.3f')} |"
                )
        if s.get("per_run"):
            lines += [
                "",
                "Within each run (one host, interleaved processes), then combined: the weighted geometric "
                "mean of the runs' ratios, with a bootstrap interval resampling processes within their run:",
                "",
                f"| comparison | runs | each run's ratio (processes) | combined | {CONFIDENCE:.0%} interval |",
                "| --- | --- | --- | --- | --- |",
            ]
            for c in s["per_run"]:
                each = ", ".join(f"{r['ratio']:.3f} ({r['n'][0]} vs {r['n'][1]})" for r in c["runs"])
                ci = "-" if c["interval"] is None else f"{c['interval'][0]:.3f}-{c['interval'][1]:.3f}"
                lines.append(f"| {c['comparison']} | {len(c['runs'])} | {each} | {c['ratio']:.3f} | {ci} |")
        lines += _effect_lines(s.get("effects") or {})
        if s.get("pairs"):
            lines += [
                "",
                "Pair by pair (the variant's and its baseline's process of one round of one run): "
                "how often the variant read slower, a two-sided sign test, and the pairs split by which of "
                "the two ran first (a gap that follows the position is not the variant's):",
                "",
                "| comparison | pairs | variant slower in | median ratio | p (sign test) "
                "| variant ran first: pairs, median | ran second: pairs, median |",
                "| --- | --- | --- | --- | --- | --- | --- |",
            ]
            for c in s["pairs"]:
                first, second = c["ran_first"], c["ran_second"]
                lines.append(
                    f"| {c['comparison']} | {c['n']} | {c['slower']} | {c['median_ratio']:.3f} | "
                    f"{_fmt(c['p_sign'], '.3f')} | {first['n']}, {_fmt(first['median_ratio'], '.3f')} | "
                    f"{second['n']}, {_fmt(second['median_ratio'], '.3f')} |"
                )
        if s["targets"]:
            word = {True: "met", False: "**not met**", None: "n/a"}
            lines += [
                "",
                "| variant | target | met (pooled medians) | met (runs combined) | measured (pooled) |",
                "| --- | --- | --- | --- | --- |",
            ]
            for t in s["targets"]:
                per_run = s.get("targets_per_run", {}).get(t["variant"])
                lines.append(
                    f"| {t['variant']} | {t['target']} | {word[t['met']]} | "
                    f"{'-' if per_run is None else word[per_run]} | {t['detail']} |"
                )
    lines += ["", "Files:", ""] + [f"- `{p}`" for p in report["sources"]]
    return "\n".join(lines) + "\n"
