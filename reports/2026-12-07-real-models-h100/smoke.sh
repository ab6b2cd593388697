# The smokes that gate the real-model timings (reports/device/rules.md, "F. Real model
# definitions", its smoke paragraph; plan item 4). One call (~13 min of work would not fit one
# call, so STEP picks): STEP=titan (~5 min): torchtitan 0.2.2 on torch 2.11, the import line, then
# plain and verify train; STEP=moe (~8 min): hf-qwen3-moe-2l decode under plain, verify, DEFAULT.
# Carry .whl and .whl-e2e (reports/2026-12-06-real-models-smoke-h100/models-and-wheels.md).
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
  .whl/*.whl .whl-e2e/*.whl > /dev/null 2>&1
export PYTHONPATH=/tmp/site
python3 -m pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/card.txt
python3 -c "import torch, triton, transformers; print(torch.__version__, triton.__version__, transformers.__version__)" \
  | tee -a $OUT/card.txt
case "${STEP:-titan}" in
  titan)
    python3 -c "import torch, torchtitan, torchtitan.models.llama3 as m; print(torch.__version__, torchtitan.__version__, hasattr(m, 'llama3_args'))" \
      > $OUT/titan-import.txt 2>&1
    echo "import rc=$?"; tail -3 $OUT/titan-import.txt
    grep -q "^2.11.0+cu130 0.2.2 True$" $OUT/titan-import.txt || exit 0  # the rule: recorded, nothing runs
    timeout 330 kselect bench e2e --device cuda --model titan-llama3-8b-2l --workloads train --variants plain,kselect-verify \
      --steps 5 --warmup-s 0 --profile-steps 0 --max-minutes 5 --out $OUT/titan > $OUT/titan.log 2>&1
    echo "titan rc=$?" ;;
  moe)
    timeout 540 kselect bench e2e --device cuda --model hf-qwen3-moe-2l --workloads decode --variants plain,kselect-verify,default \
      --steps 5 --warmup-s 0 --profile-steps 0 --max-minutes 8 --out $OUT/moe > $OUT/moe.log 2>&1
    echo "moe rc=$?" ;;
esac
for d in $OUT/titan $OUT/moe; do [ -d $d ] && tail -25 $d/README.md 2>/dev/null; done
cd $OUT && for d in titan moe; do [ -d $d ] && tar czf $d.tgz $d && rm -rf $d; done; true
