export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-deps --no-build-isolation -e . 2>&1 | tail -2
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv,noheader
kselect collect --shapes-file data/shapes/h200-bf16-sample.csv --space sample:200 --max-minutes 6.4 --out /tmp/h200-bf16 2>&1 | grep -v "^$" | tail -4
kselect dataset compact /tmp/h200-bf16
mkdir -p $OUT/ds; cp /tmp/h200-bf16/measurements.parquet /tmp/h200-bf16/fingerprint.json $OUT/ds/
kselect dataset summary /tmp/h200-bf16
timeout 145 kselect faithfulness --shapes 333x7168x5120,64x18176x4544,7x3584x14336,16x4096x131072 --per-template 3 --out $OUT/faith 2>&1 | grep -v Warning | grep -v warn_once | tail -45
