# Plan item 8 on one card (rule "D. MoE `_grouped_mm`", reports/device/rules.md): the grouped
# collection over several calls, resumed from the dataset committed in the tree. SET=moe-train
# (the default) or SET=moe-unseen (with stock's pick and compile, --stock). Each call measures
# for MIN minutes (default 7.5; a problem started before then finishes), then returns the whole
# dataset folder as $OUT/<set>.tgz, which is unpacked over data/h100-grouped-bf16/<set> and
# committed before the next call. No carry: the collection needs neither xgboost nor the models.
set -u
SET=${SET:-moe-train}
D=data/h100-grouped-bf16/$SET
mkdir -p $D
python3 -m pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/card.txt
python3 -c "import torch, triton; print(torch.__version__, triton.__version__)" | tee -a $OUT/card.txt
STOCK=""; [ "$SET" = moe-unseen ] && STOCK=--stock
timeout 570 kselect collect-grouped --set $SET --out $D --max-minutes ${MIN:-7.5} $STOCK > $OUT/collect-$SET.log 2>&1
echo "collect rc=$?"; tail -3 $OUT/collect-$SET.log
tar czf $OUT/$SET.tgz -C data/h100-grouped-bf16 $SET
