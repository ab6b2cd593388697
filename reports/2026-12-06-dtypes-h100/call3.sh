# B, resumed: the fp16/TF32/fp32 collection goes on where it stopped (reports/device/plan.md, B).
# One call per ~9 minutes of budget; the run directory comes back as a tarball each time.
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site || exit 1
python3 -m pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/card.txt
timeout -s TERM ${RETRAIN_S:-540} kselect retrain --out data/h100-dtypes --dtypes fp16,tf32,fp32 \
  --sample-shapes 120 --full-shapes 0 --gpu-minutes 20 > $OUT/retrain-log.txt 2>&1
echo "retrain rc=$?"; tail -c 600 $OUT/retrain-log.txt
tar czf $OUT/h100-dtypes.tgz data/h100-dtypes
