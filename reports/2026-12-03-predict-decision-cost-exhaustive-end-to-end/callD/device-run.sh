export PYTHONUNBUFFERED=1; set -o pipefail; T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site || exit 3
python3 -m pip install -q --no-deps --no-build-isolation -e . 2>&1 | tail -2
mkdir -p $OUT/d
left() { python3 -c "print(round(($1 - ($(date +%s) - $T0)) / 60, 2))"; }
echo "setup $(( $(date +%s) - T0 )) s; cpus $(nproc); $(python3 -c 'import torch,triton;print(torch.__version__, triton.__version__)')"
# 1. whole predict decision per GEMM, before (previous commit's code + cascade 15/64) and after, side by side, one core
for r in 1 2; do for v in before after; do
  if [ $v = before ]; then PP=scratch/before:/tmp/site; M=scratch/before/kselect/models/h200-bf16.json; else PP=/tmp/site; M=models/h200-bf16.json; fi
  PYTHONPATH=$PP BENCH_RANK=training/bench/rank.py MODEL=$M taskset -c 2 python3 scratch/ab.py 30 > $OUT/d/ab-$v-$r.json 2>$OUT/d/ab-$v-$r.err; echo "ab $v $r: $(cut -c1-400 $OUT/d/ab-$v-$r.json)"
done; done
python3 -m kselect.training.bench.rank --model models/h200-bf16.json --reps 200 --decision > $OUT/d/bench_rank.json 2>&1
python3 -c "
import json; d=json.load(open('$OUT/d/bench_rank.json'))
for k,v in d.items(): print('bench_rank', k, {a: round(b, 2) for a, b in v.items() if a.endswith('ms')})" || tail -5 $OUT/d/bench_rank.json
echo "decision benches done $(( $(date +%s) - T0 )) s"
# 2. in-compile decision on the bench shapes (predict mode, fresh process per shape)
kselect bench gemm --shapes-file data/shapes/h200-bf16-bench.csv --variants kselect-predict --max-minutes 1.2 --out $OUT/d/dec > $OUT/d/dec.log 2>&1
echo "dec done $(( $(date +%s) - T0 )) s"; sed -n 12,24p $OUT/d/dec/README.md | cut -c1-200
# 3. decode end to end with Inductor's compile phases, 3 processes per variant
kselect bench e2e --device cuda --model llama3-8b-1l --workloads decode --variants plain,default,kselect-verify,kselect-predict \
    --repeats 3 --max-minutes $(left 560) --out $OUT/d/e2e > $OUT/d/e2e.log 2>&1
echo "e2e done $(( $(date +%s) - T0 )) s"
sed -n '/^## decode/,/^## Targets/p' $OUT/d/e2e/README.md | cut -c1-260
cd $OUT && tar czf d.tgz d && rm -rf d
