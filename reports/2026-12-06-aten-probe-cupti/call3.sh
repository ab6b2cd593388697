# The third call: the unseen set's missing processes (plain 2, verify 1, predict 1), then the
# epilogue handover-vs-pinned test (E(b) in reports/device/plan.md). From the repository root.
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site || exit 1
python3 -m pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
C=$OUT/c
mkdir -p $C
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $C/card.txt
timeout 230 kselect bench gemm --shapes-file data/shapes/unseen-bench.csv --device cuda \
  --variants plain,kselect-predict,kselect-verify --repeats 1 --max-minutes 3.6 --out $C/unseen-r3 > $C/unseen-r3.log 2>&1
timeout 90 kselect bench gemm --shapes-file data/shapes/unseen-bench.csv --device cuda \
  --variants plain --repeats 1 --max-minutes 1.3 --out $C/unseen-r4 > $C/unseen-r4.log 2>&1
tail -2 $C/unseen-r3.log $C/unseen-r4.log
KSELECT_EPILOGUE_OUT=$C/epi timeout 200 python3 -m pytest -m gpu tests/training/test_gpu_epilogue_labels.py -q -p no:cacheprovider -rs > $C/epi.txt 2>&1
tail -3 $C/epi.txt
tar czf $OUT/c.tgz -C $OUT c && rm -rf $C
