export PYTHONUNBUFFERED=1
set -o pipefail
T0=$(date +%s)
python3 -m pip install -q --no-deps --no-build-isolation -e . 2>&1 | tail -2
if ! timeout 60 python3 scratch/smoke_k.py 2>&1 | tee $OUT/smoke.log; then
  echo "SMOKE FAILED: reverting to the committed kernels"; cp scratch/old/triton_kernels.py scratch/old/triton_backend.py kernels/
fi
echo "smoke done at $(( $(date +%s) - T0 )) s"
kselect collect --shapes-file data/shapes/h200-bf16-rest.csv --space sample:200 --max-minutes 6.2 --out data/h200-bf16 2>&1 | tr '\r' '\n' | grep -v "^$" | tee $OUT/rest.log | tail -4
echo "collect done at $(( $(date +%s) - T0 )) s"
kselect dataset compact data/h200-bf16
mkdir -p $OUT/ds; cp data/h200-bf16/measurements.parquet data/h200-bf16/fingerprint.json $OUT/ds/
kselect dataset summary data/h200-bf16
timeout 125 kselect faithfulness --shapes 64x18176x4544,333x7168x5120,7x3584x14336 --per-template 3 --out $OUT/faith 2>&1 | grep -v Warning | grep -v warn_once | tail -40
echo "total $(( $(date +%s) - T0 )) s"
