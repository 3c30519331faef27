"""The config diff's layer rows (analysis/config_diff.py `layer_rows`): each layer setting
both runs record, side by side, told apart as a value, its f32 storage, a Burn-only option
or a value one side does not record; and how `config_diff.main` reads them from the runs.
The optimizer's rows: test_config_diff.py."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from test_config_diff import ADAM, SGD, row, spec
from torch_burn_parity.analysis import config_diff as cd
from torch_burn_parity.config.resolve import experiment_spec

# --------------------------------------------------------------------------- layer hyperparameters

# What each trainer records of cnn_bn's layers (meta.layer_hyperparameters).
TORCH_LAYERS = {"bn.momentum": 0.1, "bn.eps": 1e-05, "ln.eps": 1e-05, "gelu.approximate": "none",
                "bn.running_var_estimator": "unbiased"}  # fmt: skip
BURN_LAYERS = {**TORCH_LAYERS, "bn.running_var_estimator": "biased"}


def test_layer_hyperparameters_are_compared_as_each_run_records_them():
    assert cd.layer_rows(TORCH_LAYERS, BURN_LAYERS) == [
        row("bn.momentum", "0.1", "0.1", "same", cd.LAYER_NOTES["bn.momentum"]),
        row("bn.eps", "1e-05", "1e-05", "same"),
        row("ln.eps", "1e-05", "1e-05", "same"),
        row("gelu.approximate", "none", "none", "same"),
        row("bn.running_var_estimator", "unbiased", "biased", "differs",
            cd.LAYER_NOTES["bn.running_var_estimator"]),
    ]  # fmt: skip


def test_a_layer_value_held_in_f32_or_missing_is_told_apart():
    burn = {"bn.eps": float(np.float32(1e-5)), "ln.eps": 1e-6, "gelu.approximate": "tanh"}
    found = {r["hyperparameter"]: r for r in cd.layer_rows(TORCH_LAYERS, burn)}
    assert found["bn.eps"]["status"] == "f32 storage"
    assert found["bn.eps"]["burn"] == json.dumps(float(np.float32(1e-5)))
    assert found["ln.eps"]["status"] == "differs"
    assert found["gelu.approximate"] == row("gelu.approximate", "none", "tanh", "differs")
    assert found["bn.momentum"]["burn"] == "—" and found["bn.momentum"]["status"] == "differs"
    assert found["bn.momentum"]["note"].startswith("burn records no value; ")


def test_an_exact_gelus_backward_is_shown_where_both_record_it():
    torch_held = {"act.approximate": "none", "act.backward": "none"}
    found = cd.layer_rows(torch_held, {"act.approximate": "none", "act.backward": "tanh"})
    backward = found[1]
    assert (backward["hyperparameter"], backward["status"]) == ("act.backward", "differs")
    assert "src/backend/ops/activation.rs lines 98–128" in backward["note"]
    # Burn's GELU is the tanh approximation: its `approximate` row says it, no backward row
    found = cd.layer_rows(torch_held, {"act.approximate": "tanh"})
    assert [r["hyperparameter"] for r in found] == ["act.approximate"]


def test_attentions_square_root_held_in_f32_is_told_apart_and_sourced():
    torch_held, burn_held = (
        {"attn.sqrt_d_k": 24**0.5},
        {"attn.sqrt_d_k": float(np.float32(24**0.5))},
    )
    (row_,) = cd.layer_rows(torch_held, burn_held)
    assert row_["status"] == "f32 storage"
    assert "burn-nn src/modules/attention/mha.rs line 290" in row_["note"]
    (same,) = cd.layer_rows({"enc.self_attn.sqrt_d_k": 4.0}, {"enc.self_attn.sqrt_d_k": 4.0})
    assert same["status"] == "same" and "mha.rs line 290" in same["note"]


def test_a_dropout_of_p_0_that_one_side_leaves_out_is_the_same():
    found = {r["hyperparameter"]: r for r in cd.layer_rows({"drop.p": 0.0, "head.p": 0.1}, {})}
    assert found["drop.p"] == row("drop.p", "0.0", "—", "same",
                                  "burn has no such layer; p 0 is the identity")  # fmt: skip
    assert found["head.p"]["status"] == "differs"  # a dropout that drops: not the identity


def test_layer_rows_come_after_the_clipping_and_before_the_backend():
    layered = spec(ADAM, clip_grad={"norm": 1.0}, model="cnn_bn")
    names = [r["hyperparameter"] for r in cd.diff_rows(layered, (TORCH_LAYERS, BURN_LAYERS))]
    assert names[-8:] == ["clip_grad.norm", "clip_grad.norm scope", *TORCH_LAYERS, "backend"]
    assert cd.diff_rows(spec(ADAM)) == cd.diff_rows(spec(ADAM), ({}, {}))


def run_file(folder, framework: str, layers: dict | None, model: str | None = "cnn_bn"):
    """A run file with the fields the config diff reads (and experiment_block checks)."""
    from torch_burn_parity.models.model_specs import spec as model_spec

    meta = {"framework": framework, **({"model": model} if model else {})}
    if layers is not None:
        meta["layer_hyperparameters"] = layers
    names = model_spec(model or "cnn1d")
    params = {name: [[0.0]] for name in names.param_names}
    buffers = {name: [[0.0]] for name in names.buffer_names}
    block = {"losses": [1.0], "final": {}, "params": {}, "meta": meta,
             "trajectory": {"params": params, "grads": params, "buffers": buffers}}  # fmt: skip
    path = folder / f"{framework}.json"
    path.write_text(json.dumps({"e": block}))
    return path


def diff_main(tmp_path, exp: dict, torch_layers, burn_layers, model="cnn_bn"):
    tmp_path.mkdir(exist_ok=True)
    path = tmp_path / "spec.json"
    path.write_text(
        json.dumps(
            experiment_spec(
                {"steps": 3, "batch_size": 16, "experiments": {"e": exp}}, "e"
            ).as_dict()
        )
    )
    runs = [run_file(tmp_path, fw, layers, model)
            for fw, layers in (("torch", torch_layers), ("burn", burn_layers))]  # fmt: skip
    csv, md = tmp_path / "out" / "d.csv", tmp_path / "out" / "d.md"
    cd.main(["--spec", str(path), "--torch-run", str(runs[0]), "--burn-run", str(runs[1]),
             "--csv", str(csv), "--md", str(md)])  # fmt: skip
    return csv, md


def test_main_adds_the_layer_rows_of_the_runs(tmp_path, capsys):
    csv, md = diff_main(tmp_path, {**SGD, "model": "cnn_bn"}, TORCH_LAYERS, BURN_LAYERS)
    out = capsys.readouterr().out
    assert out == f"e: 11 rows, differing: ['bn.running_var_estimator'] -> {csv}\n"
    frame = pd.read_csv(csv, keep_default_na=False)
    assert frame["hyperparameter"].tolist()[-6:] == [*TORCH_LAYERS, "backend"]
    assert "| bn.running_var_estimator | unbiased" in md.read_text()


@pytest.mark.parametrize(
    ("layers", "model"), [({}, "cnn1d"), (None, None)], ids=["empty", "absent"]
)
def test_the_seeds_model_gets_no_layer_rows_from_its_runs(tmp_path, layers, model):
    with_runs = diff_main(tmp_path / "a", ADAM, layers, layers, model)
    (tmp_path / "b").mkdir()
    spec_path = tmp_path / "a" / "spec.json"
    csv, md = tmp_path / "b" / "d.csv", tmp_path / "b" / "d.md"
    cd.main(["--spec", str(spec_path), "--csv", str(csv), "--md", str(md)])
    assert (with_runs[0].read_bytes(), with_runs[1].read_bytes()) == (
        csv.read_bytes(),
        md.read_bytes(),
    )


def test_a_model_with_layers_needs_the_runs_and_the_runs_its_model(tmp_path):
    path = tmp_path / "spec.json"
    config = {"steps": 3, "batch_size": 16, "experiments": {"e": {**SGD, "model": "cnn_bn"}}}
    path.write_text(json.dumps(experiment_spec(config, "e").as_dict()))
    argv = ["--spec", str(path), "--csv", str(tmp_path / "c"), "--md", str(tmp_path / "m")]
    with pytest.raises(SystemExit) as stop:
        cd.main(argv)
    assert str(stop.value.code) == (
        "config_diff: e: model cnn_bn has layer hyperparameters: pass --torch-run and --burn-run"
    )
    with pytest.raises(SystemExit) as stop:
        diff_main(tmp_path, {**SGD, "model": "cnn_bn"}, {}, {}, model="cnn1d")
    assert str(stop.value.code).startswith("config_diff: ")
    assert "torch.json: a run of model cnn1d, the spec's is cnn_bn" in str(stop.value.code)
    assert not (tmp_path / "c").exists() and not (tmp_path / "out").exists()


def test_a_burn_only_option_that_does_what_pytorch_always_does_is_the_same():
    # nn.TransformerEncoderLayer has no quiet_softmax: it always uses the standard softmax.
    found = cd.layer_rows({"enc.nhead": 2}, {"enc.nhead": 2, "enc.quiet_softmax": False})
    assert found[-1] == row("enc.quiet_softmax", "—", "false", "same",
                            "Burn-only option; off is PyTorch's softmax")  # fmt: skip
    on = cd.layer_rows({}, {"enc.quiet_softmax": True})[0]
    assert on["status"] == "differs" and on["burn"] == "true"


def test_rows_go_on_past_a_skipped_backward_and_a_burn_only_option():
    """A backward one side does not record and a Burn-only option end their own row only:
    the rows after them are still compared, a nested layer's note found by its last name."""
    torch_held = {"blocks.0.act.backward": "none", "blocks.0.attn.quiet_softmax": None,
                  "blocks.0.norm.momentum": 0.1, "blocks.0.flag": True}  # fmt: skip
    burn_held = {"blocks.0.attn.quiet_softmax": False, "blocks.0.norm.momentum": 0.1,
                 "blocks.0.flag": 1, "blocks.0.drop.p": 0.0}  # fmt: skip
    found = cd.layer_rows(torch_held, burn_held)
    assert [r["hyperparameter"] for r in found] == [
        "blocks.0.attn.quiet_softmax", "blocks.0.norm.momentum", "blocks.0.flag",
        "blocks.0.drop.p"]  # fmt: skip
    assert found[0]["status"] == "same"
    assert found[1] == row("blocks.0.norm.momentum", "0.1", "0.1", "same",
                           cd.LAYER_NOTES["bn.momentum"])  # fmt: skip
    assert found[2]["status"] == "same" and (found[2]["torch"], found[2]["burn"]) == ("true", "1")
    assert found[3] == row("blocks.0.drop.p", "—", "0.0", "same",
                           "torch has no such layer; p 0 is the identity")  # fmt: skip


def test_a_value_neither_side_shares_names_each_missing_side():
    (only_burn,) = cd.layer_rows({}, {"norm.eps": 1e-5})
    assert only_burn["torch"] == "—" and only_burn["note"] == "torch records no value"
    (both,) = cd.layer_rows({"head.p": None}, {"head.p": None})
    assert both["note"] == "torch and burn record no value"
    # a Burn-only option's name with a PyTorch value is compared as any other
    (given,) = cd.layer_rows({"enc.quiet_softmax": False}, {"enc.quiet_softmax": False})
    assert given == row("enc.quiet_softmax", "false", "false", "same")
    assert cd.burn_only("enc.quiet_softmax.extra", None, True) is None
    assert cd.burn_only("quiet_softmax", None, False)["status"] == "same"
