export PYTHONUNBUFFERED=1; set -o pipefail; T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site || exit 3
python3 -m pip install -q --no-deps --no-build-isolation -e . 2>&1 | tail -2
mkdir -p $OUT/a
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu --format=csv > $OUT/a/gpu.txt 2>&1
left() { python3 -c "print(round(($1 - ($(date +%s) - $T0)) / 60, 2))"; }
kselect bench gemm --shapes-file data/shapes/h200-bf16-bench.csv --variants kselect-predict --max-minutes 1.2 --out $OUT/a/dec > $OUT/a/dec.log 2>&1
echo "dec done $(( $(date +%s) - T0 )) s"
kselect bench e2e --device cuda --model llama3-8b-1l --workloads decode --variants plain,default,kselect-verify,kselect-predict \
    --repeats 3 --max-minutes $(left 400) --out $OUT/a/e2e > $OUT/a/e2e.log 2>&1
echo "e2e done $(( $(date +%s) - T0 )) s"
kselect bench e2e --device cuda --model llama3-8b-1l --workloads decode --variants kselect-verify --fixed-k --k 2 \
    --repeats 3 --max-minutes $(left 500) --out $OUT/a/e2e-fixedk2 > $OUT/a/e2e-fixedk2.log 2>&1
echo "e2e fixed-k done $(( $(date +%s) - T0 )) s"
for f in $OUT/a/e2e/README.md $OUT/a/e2e-fixedk2/README.md $OUT/a/dec/README.md; do echo "== $f"; sed -n 1,45p $f | cut -c1-200; done
cd $OUT && tar czf a.tgz a && rm -rf a
