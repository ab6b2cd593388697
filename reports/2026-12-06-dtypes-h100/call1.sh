# B, first call: the precision test, then the fp16/TF32/fp32 collection (reports/device/plan.md, B).
# From the repository root on the device; the run directory comes back as a tarball.
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site || exit 1
python3 -m pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
C=$OUT/b1
mkdir -p $C
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $C/card.txt
timeout 150 python3 -m pytest -m gpu tests/kernels/test_gpu_precision.py -q -p no:cacheprovider -rs > $C/precision.txt 2>&1
rc=$?; tail -3 $C/precision.txt; echo "precision rc=$rc"
if [ $rc -eq 0 ]; then
  timeout -s TERM ${RETRAIN_S:-420} kselect retrain --out data/h100-dtypes --dtypes fp16,tf32,fp32 \
    --sample-shapes 120 --full-shapes 0 --gpu-minutes 20 > $C/retrain-log.txt 2>&1
  echo "retrain rc=$?"; tail -5 $C/retrain-log.txt
  tar czf $OUT/h100-dtypes.tgz data/h100-dtypes
fi
tar czf $OUT/b1.tgz -C $OUT b1 && rm -rf $C
