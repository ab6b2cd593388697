# The grouped_mm decision path's GPU tests (reports/device/plan.md, "grouped decision path").
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site || exit 1
python3 -m pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/card.txt
timeout ${T:-230} python3 -m pytest -q -m gpu -p no:cacheprovider -rs --durations=8 tests/selector/test_gpu_grouped_selection.py \
  tests/selector/test_gpu_op_kinds.py tests/kernels/test_gpu_grouped.py > $OUT/grouped-decide.txt 2>&1
echo "rc=$?"; tail -25 $OUT/grouped-decide.txt
