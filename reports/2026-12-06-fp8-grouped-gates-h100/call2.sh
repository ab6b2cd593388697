# C and D's GPU tests again after the fixes their first run asked for (fp8: K and N divisible by 16,
# tiles over an H100's shared memory are not-launched rather than wrong; grouped: torch 2.11's
# template run function returns None), then the fp16/TF32/fp32 collection resumes (B).
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site || exit 1
python3 -m pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
C=$OUT/g2
mkdir -p $C
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $C/card.txt
timeout 200 python3 -m pytest -m gpu tests/kernels/test_gpu_scaled.py tests/selector/test_gpu_scaled_verify.py \
  -q -p no:cacheprovider -rs --durations=5 > $C/scaled.txt 2>&1
echo "scaled rc=$?"; tail -4 $C/scaled.txt
timeout 120 python3 -m pytest -m gpu tests/kernels/test_gpu_grouped.py -q -p no:cacheprovider -rs --durations=5 > $C/grouped.txt 2>&1
echo "grouped rc=$?"; tail -4 $C/grouped.txt
tar czf $OUT/g2.tgz -C $OUT g2
timeout -s TERM ${RETRAIN_S:-200} kselect retrain --out data/h100-dtypes --dtypes fp16,tf32,fp32 \
  --sample-shapes 120 --full-shapes 0 --gpu-minutes 20 > $OUT/retrain-log2.txt 2>&1
echo "retrain rc=$?"
tar czf $OUT/h100-dtypes.tgz data/h100-dtypes
