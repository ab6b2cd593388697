# Verify's reach budget on the H200 (reports/device/rules.md, "Verify's reach budget on an H200"):
# the unseen GEMMs the shipped reach model leaves to ATen (none.csv, from reach_counts.py), plain and
# kselect verify as shipped, then verify with the cost model alone (the same model file copied
# without its reach model beside it, named by the bench's --model): 3 processes each, one machine.
set -u
python3 -m pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
C=$OUT/r
mkdir -p $C /tmp/noreach
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $C/card.txt
python3 -c "import torch, triton; print(torch.__version__, triton.__version__)" | tee -a $C/card.txt
cp models/h200-bf16.json models/h200-bf16.meta.json /tmp/noreach/
S=reports/2026-12-07-verify-reach-h200/none.csv
timeout 300 kselect bench gemm --shapes-file $S --device cuda --variants plain,kselect-verify --repeats 3 \
  --max-minutes 4.8 --out $C/reach > $C/reach.log 2>&1
echo "reach rc=$?"; tail -3 $C/reach.log
timeout 230 kselect bench gemm --shapes-file $S --device cuda --model /tmp/noreach/h200-bf16.json \
  --variants kselect-verify --repeats 3 --max-minutes 3.6 --out $C/noreach > $C/noreach.log 2>&1
echo "noreach rc=$?"; tail -3 $C/noreach.log
tar czf $OUT/r.tgz -C $OUT r && rm -rf $C
