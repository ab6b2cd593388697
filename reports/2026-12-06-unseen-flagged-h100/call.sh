# "First" in reports/device/plan.md: the 8 flagged unseen GEMMs, plain and verify, 5 processes each, one machine.
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site || exit 1
python3 -m pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
C=$OUT/f
mkdir -p $C
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $C/card.txt
timeout 480 kselect bench gemm --shapes-file data/shapes/unseen-flagged.csv --device cuda \
  --variants plain,kselect-verify --repeats 5 --max-minutes 7.5 --out $C/flagged > $C/flagged.log 2>&1
echo "bench rc=$?"; tail -4 $C/flagged.log
tar czf $OUT/f.tgz -C $OUT f && rm -rf $C
