# The GPU suite (reports/device/rules.md, "GPU suite"): every `gpu` test but the never-widen
# check (its own calls), then the mutation check on the GPU when SUITE=mutate.
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl > /dev/null 2>&1
export PYTHONPATH=/tmp/site
python3 -m pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/card.txt
python3 -c "import torch, triton, xgboost; print(torch.__version__, triton.__version__, xgboost.__version__)" | tee -a $OUT/card.txt
if [ "${SUITE:-tests}" = tests ]; then
  timeout ${LIMIT:-540} python3 -m pytest -m gpu tests/ -q -p no:cacheprovider -rs --durations=15 \
    --deselect tests/selector/test_gpu_never_widen.py --junitxml=$OUT/junit.xml > $OUT/pytest.txt 2>&1
  echo "pytest rc=$?"; tail -45 $OUT/pytest.txt
else
  timeout ${LIMIT:-540} python3 reports/2026-12-06-mutation-check/mutate.py --device gpu > $OUT/mutate.txt 2>&1
  echo "mutate rc=$?"; tail -40 $OUT/mutate.txt
fi
