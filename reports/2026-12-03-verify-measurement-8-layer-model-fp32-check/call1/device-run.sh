export PYTHONUNBUFFERED=1; set -o pipefail; T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site || exit 3
python3 -m pip install -q --no-deps --no-build-isolation -e . 2>&1 | tail -2
mkdir -p $OUT/a; python3 -c "import sys, torch, triton; print(sys.version, torch.__version__, triton.__version__)" > $OUT/a/versions.txt
KSELECT_GPU_REPORT=$OUT/a/gpu_report.json timeout 150 python3 -m pytest -m gpu tests/ -q -p no:cacheprovider > $OUT/a/gpu-tests.log 2>&1
echo "gpu tests rc=$? at $(( $(date +%s) - T0 )) s"; tail -4 $OUT/a/gpu-tests.log
LEFT=$(python3 -c "print(round(min(5.9, (460 - ($(date +%s) - $T0)) / 60), 2))")
kselect bench e2e --device cuda --model llama3-8b-1l --workloads decode --variants plain,kselect-verify,kselect-predict \
    --repeats 4 --max-minutes $LEFT --out $OUT/a/decode 2>&1 | grep -v "Warning\|warn(" > $OUT/a/decode.log
echo "decode rc=$? at $(( $(date +%s) - T0 )) s"
grep -A8 "## Targets" $OUT/a/decode/README.md
LEFT=$(python3 -c "print(round((545 - ($(date +%s) - $T0)) / 60, 2))")
kselect bench e2e --device cuda --model llama3-8b-1l --workloads prefill --variants plain,kselect-verify,kselect-predict \
    --max-minutes $LEFT --out $OUT/a/prefill 2>&1 | grep -v "Warning\|warn(" > $OUT/a/prefill.log
echo "prefill rc=$? at $(( $(date +%s) - T0 )) s"
grep -A8 "## Targets" $OUT/a/prefill/README.md
cd $OUT && tar czf a.tgz a && rm -rf a
