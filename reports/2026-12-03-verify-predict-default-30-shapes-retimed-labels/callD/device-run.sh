export PYTHONUNBUFFERED=1; T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site || exit 3
python3 -m pip install -q --no-deps --no-build-isolation -e . 2>&1 | tail -2
mkdir -p $OUT/d
KSELECT_GPU_REPORT=$OUT/d/gpu_report.json timeout 230 python3 -m pytest -m gpu tests/ -q -p no:cacheprovider > $OUT/d/gpu-tests.log 2>&1
echo "gpu tests rc=$? $(( $(date +%s) - T0 )) s"; tail -4 $OUT/d/gpu-tests.log
cd $OUT && tar czf d.tgz d && rm -rf d
