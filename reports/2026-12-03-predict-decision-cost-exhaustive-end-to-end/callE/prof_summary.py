"""Cumulative seconds of selected compile functions in the --profile-compile profiles (cProfile
inflates them; compare variants with each other). Run in this directory:
    python3 prof_summary.py > prof-summary.txt   (needs e/prof/logs/*.prof from the device run)"""
import pstats

WANT = {"tuned_mm", "get_template_configs", "_finalize_template_configs", "select", "ktc_candidates",
        "_guarded", "choice_or_none", "generate_code", "triton_hash_with_backend", "_get_template_configs_impl",
        "preprocess_mm_configs", "_scale_mm_configs", "run", "codegen", "wait"}
for name in ("plain", "kselect-predict", "kselect-verify"):
    st = pstats.Stats(f"e/prof/logs/decode-{name}.prof")
    rows = {}
    for (f, _, fn), (_, calls, _, cum, _) in st.stats.items():
        if fn in WANT:
            rows[f"{f.split('site-packages/')[-1].split('/work/main/')[-1]}:{fn}"] = (calls, cum)
    print(f"== decode {name}: {st.total_tt:.2f} s profiled")
    for k, (n, c) in sorted(rows.items(), key=lambda kv: -kv[1][1])[:20]:
        print(f"  {c:7.3f} s {n:6d} calls  {k}")
