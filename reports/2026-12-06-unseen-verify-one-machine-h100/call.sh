# "First" in reports/device/plan.md: plain and verify, 3 processes each, on one machine.
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site || exit 1
python3 -m pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
C=$OUT/v
mkdir -p $C
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $C/card.txt
timeout 545 kselect bench gemm --shapes-file data/shapes/unseen-bench.csv --device cuda \
  --variants plain,kselect-verify --repeats 3 --max-minutes 8.8 --out $C/unseen > $C/unseen.log 2>&1
echo "bench rc=$?"; tail -4 $C/unseen.log
tar czf $OUT/v.tgz -C $OUT v && rm -rf $C
