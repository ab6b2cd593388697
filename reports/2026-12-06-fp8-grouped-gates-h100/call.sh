# C and D's first steps: the fp8 scaled_mm and grouped_mm GPU tests (reports/device/plan.md, C and D).
# From the repository root on the device.
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site || exit 1
python3 -m pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
C=$OUT/g
mkdir -p $C
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $C/card.txt
python3 -c "import torch, triton; print(torch.__version__, triton.__version__)" | tee -a $C/card.txt
timeout 300 python3 -m pytest -m gpu tests/kernels/test_gpu_scaled.py tests/selector/test_gpu_scaled_verify.py \
  -q -p no:cacheprovider -rs --durations=10 > $C/scaled.txt 2>&1
echo "scaled rc=$?"; tail -15 $C/scaled.txt
timeout 230 python3 -m pytest -m gpu tests/kernels/test_gpu_grouped.py -q -p no:cacheprovider -rs --durations=10 > $C/grouped.txt 2>&1
echo "grouped rc=$?"; tail -15 $C/grouped.txt
tar czf $OUT/g.tgz -C $OUT g && rm -rf $C
