# The never-widen check (docs/device-plan.md, "Never widen"), after the fix. Call 1 runs repeats
# 0 and 1 of the three arms (the worker, cold processes); call 2 carries them (check/records) and
# runs the GPU test, which runs repeat 2 and judges all three.
set -u
python3 -m pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/card.txt
python3 -c "import torch, triton; print(torch.__version__, triton.__version__)" | tee -a $OUT/card.txt
REC=${REC:-$OUT/records}
mkdir -p $REC
if [ "${STEP:-1}" = 1 ]; then
  for r in 0 1; do for arm in stock verify predict; do
    d=$(mktemp -d); mkdir -p $REC/$arm-$r
    TORCHINDUCTOR_CACHE_DIR=$d/inductor TRITON_CACHE_DIR=$d/triton timeout 250 python3 tests/selector/never_widen_worker.py \
      --arm $arm --out $REC/$arm-$r/result.json > $OUT/$arm-$r.log 2>&1
    echo "$arm-$r rc=$?"
  done; done
else
  cp -r reports/2026-12-07-never-widen-h100/check/records/. $REC/
  KSELECT_NEVER_WIDEN_RECORDS=$REC timeout 560 python3 -m pytest -q -m gpu -p no:cacheprovider tests/selector/test_gpu_never_widen.py > $OUT/pytest.txt 2>&1
  echo "pytest rc=$?"; tail -15 $OUT/pytest.txt
fi
cd $OUT && tar czf records.tgz -C $REC . && rm -rf $REC
