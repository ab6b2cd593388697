export PYTHONUNBUFFERED=1; set -o pipefail; T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site || exit 3
python3 -m pip install -q --no-deps --no-build-isolation -e . 2>&1 | tail -2
mkdir -p $OUT/k
python3 -c "
import torch, json
from kselect.training.bench.kernel_time import profile_kernels
a=torch.randn(4096,4096,device='cuda',dtype=torch.bfloat16); q=torch.randn(8,32,1024,128,device='cuda',dtype=torch.bfloat16)
f=torch.compile(lambda: (torch.relu(a@a)+1, torch.nn.functional.scaled_dot_product_attention(q,q,q,is_causal=True)))
f(); f()
print(json.dumps(profile_kernels(f, torch.device('cuda'), steps=3), indent=1))
" 2>&1 | tail -40 | tee $OUT/k/sanity.txt
kselect bench e2e --device cuda --model llama3-8b-8l --workloads prefill --variants plain,default,kselect-verify,kselect-predict \
    --max-minutes 3.7 --out $OUT/k/prefill8 2>&1 | grep -v "Warning\|warn(" > $OUT/k/prefill8.log
echo "prefill8 rc=$? at $(( $(date +%s) - T0 )) s"; grep -A6 "## Targets" $OUT/k/prefill8/README.md; grep -A8 "Kernel time per step" $OUT/k/prefill8/README.md
LEFT=$(python3 -c "print(round(min(3.2, (450 - ($(date +%s) - $T0)) / 60), 2))")
kselect bench e2e --device cuda --model llama3-8b-8l --workloads decode --variants plain,default,kselect-verify \
    --max-minutes $LEFT --out $OUT/k/decode8 2>&1 | grep -v "Warning\|warn(" > $OUT/k/decode8.log
echo "decode8 rc=$? at $(( $(date +%s) - T0 )) s"; grep -A6 "## Targets" $OUT/k/decode8/README.md; grep -A8 "Kernel time per step" $OUT/k/decode8/README.md
cd $OUT && tar czf k.tgz k && rm -rf k
