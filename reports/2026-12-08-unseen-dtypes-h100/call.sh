# Plan item 3 (rule "B. fp16 and TF32", reports/device/rules.md): the 70 unseen GEMMs in one
# dtype, plain against kselect verify, 3 processes each on one machine. DTYPE=fp16 or tf32, one
# call each (~8 min; the bf16 run of the same size took 460 s on an H100). TF32 GEMMs are
# compiled and timed under torch's TF32 setting (the bench's `fp32_math`; each row records it).
set -u
: "${DTYPE:?DTYPE=fp16 or DTYPE=tf32}"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site || exit 1
python3 -m pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
C=$OUT/$DTYPE
mkdir -p $C
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $C/card.txt
timeout 545 kselect bench gemm --workload unseen --dtype $DTYPE --device cuda \
  --variants plain,kselect-verify --repeats 3 --max-minutes 8.8 --out $C/unseen > $C/unseen.log 2>&1
echo "bench rc=$?"; tail -4 $C/unseen.log
tar czf $OUT/$DTYPE.tgz -C $OUT $DTYPE && rm -rf $C
