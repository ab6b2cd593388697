# The never-widen check (reports/device/plan.md, "Never widen"), after the fix: 3 repeats of the
# three arms (stock, verify, predict), one cold process each (~135 s a process on the H100, so
# one repeat a call), the arms' order turned by one each repeat (as the GPU test's arm_order).
# Records made by earlier calls sit in check/records, an H200's in check/records-h200 (carried in
# the tree). STEP=1 runs the repeats named in R (default 1) with the worker; STEP=3 runs the
# side-by-side process of each repeat in R (every op under the three arms in one process, the
# order turned by the repeat; ~6 min a process on the H100) and, once all three are in, the GPU
# test's compile clause over them; STEP=2 runs the whole GPU test, which reads the records there,
# runs what is missing and judges all three repeats.
set -u
python3 -m pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/card.txt
python3 -c "import torch, triton; print(torch.__version__, triton.__version__)" | tee -a $OUT/card.txt
REC=$OUT/records
# each card its own records: an H200's sit in check/records-h200 (an H100's in check/records)
SRC=reports/2026-12-07-never-widen-h100/check/records
grep -q H200 $OUT/card.txt && SRC=$SRC-h200
mkdir -p $REC $SRC && cp -r $SRC/. $REC/
if [ "${STEP:-1}" = 1 ]; then
  for r in ${R:-1}; do
    arms="stock verify predict"; [ $((r % 3)) = 1 ] && arms="verify predict stock"; [ $((r % 3)) = 2 ] && arms="predict stock verify"
    for arm in $arms; do
      [ -f $REC/$arm-$r/result.json ] && continue
      d=$(mktemp -d); mkdir -p $REC/$arm-$r
      TORCHINDUCTOR_CACHE_DIR=$d/inductor TRITON_CACHE_DIR=$d/triton timeout 250 python3 tests/selector/never_widen_worker.py \
        --arm $arm --out $REC/$arm-$r/result.json > $OUT/$arm-$r.log 2>&1
      echo "$arm-$r rc=$?"
    done
  done
elif [ "${STEP}" = 3 ]; then
  for r in ${R:-0}; do
    [ -f $REC/side-by-side-$r/result.json ] && continue
    d=$(mktemp -d); mkdir -p $REC/side-by-side-$r
    TORCHINDUCTOR_CACHE_DIR=$d/inductor TRITON_CACHE_DIR=$d/triton timeout 560 python3 tests/selector/never_widen_worker.py \
      --arms stock,verify,predict --shift $r --ops scaled_mm_rowwise,scaled_mm_tensorwise,grouped_mm,int_mm,fp32_mm \
      --out $REC/side-by-side-$r/result.json > $OUT/side-by-side-$r.log 2>&1
    echo "side-by-side-$r rc=$?"
    python3 reports/2026-12-07-never-widen-h100/split.py $REC | tail -12
  done
  # all three side-by-side processes in: the GPU test's compile clause judges them (reads only)
  if [ -f $REC/side-by-side-0/result.json ] && [ -f $REC/side-by-side-1/result.json ] && [ -f $REC/side-by-side-2/result.json ]; then
    KSELECT_NEVER_WIDEN_RECORDS=$REC timeout 120 python3 -m pytest -q -m gpu -p no:cacheprovider -k compiles_no_slower \
      tests/selector/test_gpu_never_widen.py > $OUT/pytest-compile.txt 2>&1
    echo "pytest (compile clause) rc=$?"; tail -15 $OUT/pytest-compile.txt
  fi
else
  KSELECT_NEVER_WIDEN_RECORDS=$REC timeout 560 python3 -m pytest -q -m gpu -p no:cacheprovider tests/selector/test_gpu_never_widen.py > $OUT/pytest.txt 2>&1
  echo "pytest rc=$?"; tail -15 $OUT/pytest.txt
fi
cd $OUT && tar czf records.tgz -C $REC . && rm -rf $REC
