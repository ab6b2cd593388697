# Verify's readings on the lm_head (reports/device/rules.md, "Verify's readings: the lm_head";
# reports/device/plan.md): one call on nvidia-h100-x1, nothing to carry (serving reads
# the shipped JSON model; no xgboost). lm_head.py times the seven lm_head GEMMs beside
# nvidia-smi's log (~3-4 min); judge.py applies the rule to what it wrote. Under 560 s in all:
# the install, at most 480 s for the run (no GEMM starts after 390 s), the judge, the tar.
set -u
D=reports/2026-12-07-verify-readings-lm-head-h100
python3 -m pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv | tee $OUT/card.txt
python3 -c "import torch, triton; print(torch.__version__, triton.__version__)" | tee -a $OUT/card.txt
R=$OUT/run
mkdir -p $R
d=$(mktemp -d)
# DEADLINE_S=170: the rule's short form (its five GEMMs first), for a budget left short;
# M=2048,8192 PROTOCOLS=1: those GEMMs only, with verify's timing protocol taken apart (protocols.py)
DEADLINE_S=${DEADLINE_S:-390}
PYTHONUNBUFFERED=1 TORCHINDUCTOR_CACHE_DIR=$d/inductor TRITON_CACHE_DIR=$d/triton timeout -k 10 $((DEADLINE_S + 90)) \
  python3 $D/lm_head.py $R --deadline-s $DEADLINE_S ${M:+--m $M} ${PROTOCOLS:+--protocols} > $OUT/log.txt 2>&1
echo "lm_head rc=$?"
# the script stops its nvidia-smi; one it could not stop (killed at the timeout) stops here
p=$(cat $R/smi.pid 2>/dev/null) && grep -qs nvidia-smi /proc/$p/comm && kill $p
tail -4 $OUT/log.txt
python3 $D/judge.py $R > $OUT/judge.md 2>&1
echo "judge rc=$?"
cat $OUT/judge.md
# PROTOCOLS=1 (with M=2048,8192): which step of verify's timing reads a heavy ATen GEMM fast
[ -n "${PROTOCOLS:-}" ] && python3 $D/protocols.py $R | tee $OUT/protocols.md
cd $OUT && tar czf run.tgz run && rm -rf run
