"""`kselect doctor`: what kselect will do on this machine, on the CPU and for the cards the
shipped models were made for (their fingerprints, as the selector would see them)."""

import json
from pathlib import Path

from kselect.selector import doctor
from kselect.selector.model.cost_model import meta_path
from kselect.selector.model.discovery import shipped_models
from kselect.training.cli.main import main

REPO = Path(__file__).resolve().parents[2]


def _card(name: str) -> dict:
    fp = json.loads(meta_path(next(p for p in shipped_models() if p.name == name)).read_text())["fingerprint"]
    return dict(fp, architecture="sm_90")


def test_the_cpu_report_says_nothing_is_decided(capsys):
    """Fails if the CPU is reported as served by a GPU model, or a fact goes missing."""
    assert main(["doctor"]) == 0
    text = capsys.readouterr().out
    for label in ("card:", "fingerprint:", "torch:", "triton:", "model:", "mode:", "cache:", "decides:"):
        assert label in text
    assert "model:       none" in text and "stock autotuning" in text


def test_environment_settings_and_their_errors_are_reported():
    got = doctor.diagnose("cpu", environ={"KSELECT_MODE": "verify", "KSELECT_CACHE_DIR": "/tmp/kc"})
    assert got.mode == "verify" and got.cache_dir == "/tmp/kc" and got.settings_error is None
    bad = doctor.diagnose("cpu", environ={"KSELECT_MODE": "sometimes"})
    assert "KSELECT_MODE" in bad.settings_error


def test_a_card_with_its_own_model_is_served_by_it():
    """Fails if the doctor's choice differs from discovery's: the H200 gets the H200 model."""
    path, why, ranker = doctor._model(_card("h200-bf16.json"), None)
    assert path == "h200-bf16.json" and "this card" in why
    # fp16 and TF32 by the Hopper model of those dtypes, joined as at serving; no scaled_mm
    assert "fp16, tf32: hopper-fp16-tf32.json" in why
    assert "verify's budget: h200-bf16.reach.json" in why and ranker.reach is not None  # the H100's has none
    h100 = json.loads((REPO / "data" / "h100-dtypes" / "data" / "fingerprint.json").read_text())
    path, why, _ = doctor._model(dict(h100, architecture="sm_90"), None)
    assert path == "hopper-bf16.json" and "verify's budget" not in why
    assert doctor.decided(ranker) == {"ops": ["addmm", "baddbmm", "bmm", "mm"], "dtypes": ["bf16", "fp16", "tf32"]}


def test_the_cards_measured_picks_are_counted():
    """Fails if the doctor counts another card's table, or none for a card that has one."""
    got = doctor.measured_picks(_card("h200-bf16.json"))
    assert got["gemms"] > 100 and 0 < got["templates"] < got["gemms"], got
    assert doctor.measured_picks(dict(_card("h200-bf16.json"), gpu_name="NVIDIA GH200 480GB")) == {}


def test_another_hopper_card_is_served_by_its_architecture():
    fp = dict(_card("h200-bf16.json"), gpu_name="NVIDIA GH200 480GB", fingerprint_id="x")
    path, why, _ = doctor._model(fp, None)
    assert path is not None and "same architecture" in why


def test_a_broken_named_model_is_reported_not_raised(tmp_path):
    broken = tmp_path / "m.json"
    broken.write_text("{")
    path, why, ranker = doctor._model(_card("h200-bf16.json"), broken)
    assert path is None and "stock autotuning" in why and ranker is None


def test_json_output_round_trips(capsys):
    assert main(["doctor", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["device"]["device_type"] == "cpu" and got["decides"] == {}


def test_a_cards_fingerprint_file_is_asked_about_from_any_machine(capsys, tmp_path):
    """`--fingerprint`: the H200 dataset's fingerprint gets the H200's model and budget on this
    CPU, as on the card; a model's sidecar names its card too. Fails if the file is ignored (the
    CPU's report) or read as another card."""
    assert main(["doctor", "--fingerprint", str(REPO / "data" / "h200-bf16" / "fingerprint.json")]) == 0
    text = capsys.readouterr().out
    assert "card:        NVIDIA H200, 132 SMs, sm_90" in text and "model:       h200-bf16.json" in text
    assert "verify's budget: h200-bf16.reach.json" in text and "decides:     addmm, baddbmm, bmm, mm" in text
    sidecar = meta_path(next(p for p in shipped_models() if p.name == "h200-bf16.json"))
    assert main(["doctor", "--json", "--fingerprint", str(sidecar)]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["device"]["gpu_name"] == "NVIDIA H200" and got["model"] == "h200-bf16.json"


def test_a_fingerprint_file_that_names_no_card_is_a_clear_error(capsys, tmp_path):
    no_gpu = tmp_path / "cpu.json"
    no_gpu.write_text(json.dumps({"fingerprint_id": "x", "device_type": "cpu"}))
    not_json = tmp_path / "bad.json"
    not_json.write_text("{")
    for path, said in ((tmp_path / "missing.json", "cannot be read"), (not_json, "not JSON"), (no_gpu, "names no GPU")):
        assert main(["doctor", "--fingerprint", str(path)]) == 2
        err = capsys.readouterr().err
        assert str(path) in err and said in err, err
