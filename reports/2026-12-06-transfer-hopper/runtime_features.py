"""Does the pooled model need the serving card's fingerprint? The pooled artifact (model/,
trained on all rows of both cards) scored as is on each card's data, featurised with that
card's fingerprint and with the one its sidecar names first (the H200's: what the runtime
featurises with today, selector/decide/policy.py reads the model's own fingerprint). In-sample,
so the captures are optimistic; the difference between the two featurisations is the point.

    python reports/2026-12-06-transfer-hopper/runtime_features.py   # after transfer_table.py, ~1 min
writes runtime-features.json beside itself.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from kselect.selector.jsonable import json_default
from kselect.selector.model.cost_model import CostModel
from kselect.training.learn.held_out import load_data
from kselect.training.learn.transfer import score_as_is

REPORT = Path(__file__).resolve().parent
ROOT = REPORT.parents[1]
WORK = Path(os.environ.get("TRANSFER_WORK", "/tmp/transfer-hopper"))  # transfer_table.py's compacted H100 copy
DATA = {"H100": WORK / "h100-bf16", "H200": Path("data/h200-bf16")}


def main() -> None:
    os.chdir(ROOT)
    model = CostModel.load(REPORT / "model" / "hopper-bf16-pooled.json")
    out = {"sidecar_fingerprint": model.fingerprint.get("gpu_name"), "cards": {}}
    for card, path in DATA.items():
        df, fp = load_data(path)
        out["cards"][card] = {}
        for features in ("data", "model"):
            result, _, _ = score_as_is(df, fp, model, "family", device_features=features)
            real = result["headroom_capture"]["family"]["realistic"]
            out["cards"][card][f"{features}'s card"] = {
                "featurised_with": result["featurised_with"]["gpu_name"],
                "verify": real["verify"],
                "predict": real["predict"],
                "aten+1": real["aten_plus_k"]["cost_model"][1],
                "aten+4": real["aten_plus_k"]["cost_model"][4],
            }
    (REPORT / "runtime-features.json").write_text(json.dumps(out, indent=1, default=json_default) + "\n")


if __name__ == "__main__":
    main()
