# The second call (A2 in reports/device/history.md), run from the repository root on the GPU machine.
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site || exit 1
python3 -m pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
R=reports/2026-12-06-aten-probe-cupti
B=$OUT/b
mkdir -p $B
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $B/card.txt
timeout 85 python3 $R/probe_facts.py $B/facts data/shapes/unseen-bench.csv data/shapes/h200-bf16-bench.csv --deadline-s 75 > $B/facts.log 2>&1
head -3 $B/facts/summary.md
timeout 90 python3 reports/2026-12-06-unseen-bench-h100-noise-rule/aten_gap.py $B/gap --arms probe_graph --deadline-s 80 > $B/gap.log 2>&1
READER=$(python3 $R/pick_reader.py $B/facts $B/gap 2> $B/reader-why.txt || echo none)
cat $B/reader-why.txt; echo "reader: $READER" | tee $B/reader.txt
if [ "$READER" != none ]; then
  KSELECT_ATEN_PROBE=$READER timeout 350 kselect bench gemm --shapes-file data/shapes/unseen-bench.csv --device cuda \
    --variants plain,kselect-verify,kselect-predict --repeats 3 --max-minutes 5.4 --out $B/unseen > $B/unseen.log 2>&1
  tail -3 $B/unseen.log
fi
tar czf $OUT/b.tgz -C $OUT b && rm -rf $B
