# The fair-baseline probe (reports/device/rules.md, "A fair baseline: the probe"): probe.py in
# one fresh process per cuBLAS workspace setting, on the two GEMMs where verify's kept cuBLAS
# ran faster than plain's (32x16384x3072 on the H100, 64x4672x4544 on the H200).
set -u
python3 -m pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/card.txt
for shape in 32x16384x3072 64x4672x4544; do
  for ws in default ":4096:8" ":0:0"; do
    d=$OUT/$shape/ws${ws//:/_}
    mkdir -p $d
    if [ "$ws" = default ]; then env -u CUBLAS_WORKSPACE_CONFIG timeout 150 python3 reports/2026-12-07-fair-baseline-h100/probe.py --shape $shape --out $d > $d/log.txt 2>&1
    else CUBLAS_WORKSPACE_CONFIG=$ws timeout 150 python3 reports/2026-12-07-fair-baseline-h100/probe.py --shape $shape --out $d > $d/log.txt 2>&1; fi
    echo "$shape ws=$ws rc=$?"; grep -E "ms \(spread" $d/log.txt
  done
done
