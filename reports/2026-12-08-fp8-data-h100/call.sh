# Plan item 9 (rule "C. fp8 `_scaled_mm`", reports/device/rules.md), on an H100. STEP=faith: the
# faithfulness sample first (8 problems of data/shapes/fp8.csv spread over both scalings and
# M = 1-8192; ATen's _scaled_mm and 2 tiles of each scaled template; each candidate's output
# checked against ATen's). STEP=collect (the default): the collection over several calls,
# resumed from data/h100-fp8 as committed; it measures for MIN minutes (default 8) and returns
# the dataset folder as $OUT/h100-fp8.tgz, unpacked over data/h100-fp8 and committed before the
# next call. No carry.
set -u
python3 -m pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/card.txt
python3 -c "import torch, triton; print(torch.__version__, triton.__version__)" | tee -a $OUT/card.txt
case "${STEP:-collect}" in
  faith)
    timeout 540 kselect faithfulness --shapes-file data/shapes/fp8.csv --sample 8 --per-template 2 \
      --out $OUT/faith-fp8 > $OUT/faith.log 2>&1
    echo "faithfulness rc=$?"; tail -25 $OUT/faith.log ;;
  collect)
    timeout 570 kselect collect --shapes-file data/shapes/fp8.csv --backends aten,triton --space sample:200 \
      --out data/h100-fp8 --max-minutes ${MIN:-8} > $OUT/collect.log 2>&1
    echo "collect rc=$?"; tail -2 $OUT/collect.log
    tar czf $OUT/h100-fp8.tgz -C data h100-fp8 ;;
esac
