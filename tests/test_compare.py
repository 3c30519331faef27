"""compare.py: the seed's output format, non-finite values, bad shapes, buffers, the CPU note
(the seed's own train_both.py through it: test_compare_seed.py)."""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest

from compare_helpers import run, write
from torch_burn_parity.analysis import compare


def seed_block(shift: float = 0.0, loss_shift: float = 0.0, nested: bool = False) -> dict:
    """A block in the seed's format; ``nested``: params as ``p.tolist()`` writes them."""
    conv, fc = [0.1 + shift] * 20, [0.2] * 144
    if nested:
        conv, fc = np.reshape(conv, (4, 1, 5)).tolist(), np.reshape(fc, (3, 48)).tolist()
    return {
        "losses": [1.0 + loss_shift * (i == 3) for i in range(100)],
        "final": {"loss": 0.06, "correct": 96},
        "params": {
            "conv.weight": conv,
            "conv.bias": [0.0] * 4,
            "fc.weight": fc,
            "fc.bias": [0.0] * 3,
        },
    }


def test_seed_files_in_the_seed_format(tmp_path):
    # The seed's pt.json / burn.json shape: {"sgd": {...}, "adam": {...}}, nothing else.
    pt = write(tmp_path / "pt.json", {"sgd": seed_block(), "adam": seed_block()})
    burn = write(
        tmp_path / "burn.json",
        {"sgd": seed_block(7.15e-07, 1.79e-07), "adam": seed_block(3.52e-06)},
    )
    proc = run(pt, burn, "--tol", "1e-6")
    assert proc.returncode == 0
    lines = proc.stdout.splitlines()
    assert lines[0] == "sgd.losses               n=100  max|diff|=1.79e-07"
    assert lines[2] == "sgd.final.correct        n=  1  max|diff|=0.00e+00"
    assert lines[3] == "sgd.params.conv.weight   n= 20  max|diff|=7.15e-07"
    assert lines[10] == "adam.params.conv.weight  n= 20  max|diff|=3.52e-06"
    assert lines[-1] == "worst=3.52e-06 tol=1e-06 MISMATCH"
    assert len(lines) == 15


def test_within_tolerance_is_ok_and_strict_fails_only_on_mismatch(tmp_path):
    a = write(tmp_path / "a.json", {"sgd": seed_block()})
    b = write(tmp_path / "b.json", {"sgd": seed_block(1e-7)})
    ok = run(a, b, "--tol", "1e-6", "--strict")
    assert ok.returncode == 0 and ok.stdout.splitlines()[-1] == "worst=1.00e-07 tol=1e-06 OK"
    assert run(a, b, "--tol", "1e-8", "--strict").returncode == 1


def test_nan_is_never_a_match():
    a, b = seed_block(), seed_block()
    a["params"]["fc.bias"][0] = b["params"]["fc.bias"][0] = math.nan
    text = compare.render(compare.compare({"e": a}, {"e": b}, "a", "b"), 1e-6)
    assert "e.params.fc.bias      n=  3  max|diff|=nan" in text
    assert text.splitlines()[-1] == "worst=nan tol=1e-06 MISMATCH"


def test_non_finite_strings_in_run_files_are_read(tmp_path):
    a = write(tmp_path / "a.json", {"e": seed_block()})
    broken = seed_block()
    broken["losses"][5] = "Infinity"
    b = write(tmp_path / "b.json", {"e": broken})
    assert run(a, b).stdout.splitlines()[0].split() == ["e.losses", "n=100", "max|diff|=nan"]


@pytest.mark.parametrize(
    ("content", "message"),
    [("{", "not valid JSON"), ('{"other": {}}', "no experiment 'e'"), ("[]", "JSON object")],
)
def test_bad_run_file_is_named(tmp_path, content, message):
    a = write(tmp_path / "a.json", {"e": seed_block()})
    bad = tmp_path / "bad.json"
    bad.write_text(content)
    proc = run(a, bad)
    assert proc.returncode == 2
    assert "bad.json" in proc.stderr and message in proc.stderr


def test_tolerance_must_be_positive(tmp_path):
    a = write(tmp_path / "a.json", {"e": seed_block()})
    proc = run(a, a, "--tol", "0")
    assert proc.returncode != 0 and "--tol must be a positive number" in proc.stderr


def test_nested_lists_flatten_row_major_with_their_shape():
    assert compare.flatten(7, "f: k") == ([7.0], ())
    assert compare.flatten([[1, 2, 3], [4, 5, 6]], "f: k") == ([1, 2, 3, 4, 5, 6], (2, 3))
    deep = np.arange(24.0).reshape(2, 3, 1, 4)
    assert compare.flatten(deep.tolist(), "f: k") == (deep.ravel().tolist(), (2, 3, 1, 4))
    assert compare.flatten([], "f: k") == ([], (0,))


# --------------------------------------------------------------------------- bad shapes


def set_param(name, value):
    def edit(block):
        block["params"][name] = value
        return block

    return edit


def set_loss(i, value):
    def edit(block):
        block["losses"][i] = value
        return block

    return edit


def set_field(path, value):
    def edit(block):
        *parents, last = path
        target = block
        for p in parents:
            target = target[p]
        target[last] = value
        return block

    return edit


FC = np.full((3, 48), 0.2).tolist()
FC_WITH_STRING = copy.deepcopy(FC)
FC_WITH_STRING[1][5] = "abc"

BAD = {
    "string": (
        set_param("fc.weight", FC_WITH_STRING),
        "sgd.params.fc.weight[1][5]",
        "expected numbers or nested lists of numbers, found a string ('abc')",
    ),
    "string value": (set_loss(0, "1.0"), "sgd.losses[0]", "found a string ('1.0')"),
    "dict": (set_loss(3, {"x": 1}), "sgd.losses[3]", "found an object"),
    "none in list": (
        set_param("conv.bias", [0.0, None, 0.0, 0.0]),
        "sgd.params.conv.bias[1]",
        "found null",
    ),
    "bool": (set_field(["final", "correct"], True), "sgd.final.correct", "a boolean (true)"),
    "ragged": (
        set_param("conv.weight", [[1.0, 2.0], [3.0]]),
        "sgd.params.conv.weight",
        "ragged nesting, [0] is a list of shape [2] but [1] is a list of shape [1]",
    ),
    "ragged depth": (
        set_param("fc.bias", [[0.0], 0.0, [0.0]]),
        "sgd.params.fc.bias",
        "ragged nesting, [0] is a list of shape [1] but [1] is a number",
    ),
    "shape mismatch": (
        set_param("fc.weight", np.full((48, 3), 0.2).tolist()),
        "sgd.params.fc.weight",
        "a list of shape [48][3] in",
    ),
    "count mismatch": (set_param("conv.weight", [0.1] * 19), "sgd.params.conv.weight", "[19]"),
    "experiment not an object": (lambda block: [1.0, 2.0], "sgd", "expected an object"),
    "final not an object": (set_field(["final"], 0.06), "sgd.final", "found a float"),
    "params not an object": (set_field(["params"], [0.1] * 20), "sgd.params", "found a list"),
}


@pytest.mark.parametrize("bad_side", ["a", "b"])
@pytest.mark.parametrize(("edit", "key", "message"), BAD.values(), ids=BAD.keys())
def test_bad_shape_is_one_line_naming_file_and_key(tmp_path, edit, key, message, bad_side):
    good = write(tmp_path / "good.json", {"sgd": seed_block(nested=True)})
    bad = write(tmp_path / "pt.json", {"sgd": edit(seed_block(nested=True))})
    proc = run(bad, good) if bad_side == "a" else run(good, bad)
    assert proc.returncode == 2 and proc.stdout == ""
    assert "Traceback" not in proc.stderr
    assert len(proc.stderr.splitlines()) == 1, proc.stderr
    assert proc.stderr.startswith("compare: ") and proc.stderr.endswith("\n")
    assert str(bad) in proc.stderr and key in proc.stderr and message in proc.stderr


# --------------------------------------------------------------------------- in process
# The same contract through compare.main and compare.compare, without a subprocess.


@pytest.mark.parametrize("bad_side", ["a", "b"])
@pytest.mark.parametrize(("edit", "key", "message"), BAD.values(), ids=BAD.keys())
def test_bad_shape_message_in_process(tmp_path, capsys, edit, key, message, bad_side):
    good = write(tmp_path / "good.json", {"sgd": seed_block(nested=True)})
    bad = write(tmp_path / "pt.json", {"sgd": edit(seed_block(nested=True))})
    argv = [str(bad), str(good)] if bad_side == "a" else [str(good), str(bad)]
    assert compare.main(argv) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.splitlines()) == 1
    assert err.startswith("compare: ") and str(bad) in err and key in err and message in err


def test_rows_in_the_seeds_order_with_their_differences():
    a = {"sgd": seed_block(), "adam": seed_block()}
    b = {"sgd": seed_block(7.15e-07, 1.79e-07), "adam": seed_block(nested=True)}
    rows = compare.compare(a, b, "pt.json", "burn.json")
    assert [(label, n) for label, n, _ in rows] == [
        (f"{e}.{key}", n)
        for e in ("sgd", "adam")
        for key, n in [
            ("losses", 100),
            ("final.loss", 1),
            ("final.correct", 1),
            ("params.conv.weight", 20),
            ("params.conv.bias", 4),
            ("params.fc.weight", 144),
            ("params.fc.bias", 3),
        ]
    ]
    diffs = [d for *_, d in rows]
    assert diffs[0] == pytest.approx(1.79e-07) and diffs[3] == pytest.approx(7.15e-07)
    assert diffs[1:3] == [0.0, 0.0] and diffs[4:] == [0.0] * 10


def test_difference_is_of_values_not_of_their_sum():
    a, b = seed_block(), seed_block()
    b["params"]["fc.bias"] = [0.25, -0.5, 1.0]
    a["params"]["fc.bias"] = [0.25, 0.5, 0.75]
    rows = dict((label, d) for label, _, d in compare.compare({"e": a}, {"e": b}, "a", "b"))
    assert rows["e.params.fc.bias"] == 1.0 and rows["e.params.conv.bias"] == 0.0


def test_max_abs_diff_edges():
    assert compare.max_abs_diff([], []) == 0.0  # an empty parameter matches
    assert compare.max_abs_diff([1.0, -2.0], [1.5, 2.0]) == 4.0
    assert math.isnan(compare.max_abs_diff([1.0, math.inf], [1.0, math.inf]))
    with pytest.raises(ValueError):
        compare.max_abs_diff([1.0, 2.0], [1.0])  # never truncated silently


def test_flat_and_nested_params_compare_either_way_round():
    flat, nested = seed_block(), seed_block(nested=True)
    nested["params"]["conv.weight"] = np.reshape([0.1] * 20, (5, 4)).tolist()  # any shape
    for a, b in [(flat, nested), (nested, flat)]:
        rows = compare.compare({"e": a}, {"e": b}, "a", "b")
        assert all(d == 0.0 for *_, d in rows)


@pytest.mark.parametrize("side", ["a", "b"])
@pytest.mark.parametrize(("field", "label"), [("losses", "losses"), ("final", "final.loss")])
def test_a_missing_field_is_named_with_the_file_that_lacks_it(side, field, label):
    blocks = {"a": seed_block(), "b": seed_block()}
    del blocks[side][field]
    with pytest.raises(compare.FormatError) as err:
        compare.compare({"e": blocks["a"]}, {"e": blocks["b"]}, "a.json", "b.json")
    assert str(err.value) == f"{side}.json: no e.{label}"


def test_an_experiment_missing_from_the_second_file_is_named():
    with pytest.raises(compare.FormatError) as err:
        compare.compare({"sgd": seed_block(), "adam": seed_block()}, {"sgd": seed_block()},
                        "pt.json", "burn.json")  # fmt: skip
    assert str(err.value) == "burn.json: no experiment 'adam' (it is in pt.json)"


def test_a_block_without_params_compares_the_rest():
    a, b = seed_block(), seed_block(loss_shift=1e-3)
    del a["params"], b["params"]
    rows = compare.compare({"e": a}, {"e": b}, "a", "b")
    assert [label for label, *_ in rows] == ["e.losses", "e.final.loss", "e.final.correct"]
    assert rows[0][2] == pytest.approx(1e-3)


def test_a_param_only_in_the_second_file_is_not_compared():
    a, b = seed_block(), seed_block()
    b["params"]["extra"] = [1.0]
    assert len(compare.compare({"e": a}, {"e": b}, "a", "b")) == 7
    with pytest.raises(compare.FormatError, match=r"^a: no e\.params\.extra$"):
        compare.compare({"e": b}, {"e": a}, "b", "a")


def test_main_writes_out_and_strict_exit_codes(tmp_path, capsys):
    a = write(tmp_path / "a.json", {"sgd": seed_block()})
    b = write(tmp_path / "b.json", {"sgd": seed_block(2e-6)})
    out = tmp_path / "sub" / "compare.txt"
    assert compare.main([str(a), str(b), "--tol", "1e-5", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert out.read_text() == printed and printed.endswith("worst=2.00e-06 tol=1e-05 OK\n")
    assert printed.splitlines()[3] == "sgd.params.conv.weight  n= 20  max|diff|=2.00e-06"
    assert compare.main([str(a), str(b), "--tol", "1e-6"]) == 0  # a mismatch, not strict
    assert compare.main([str(a), str(b), "--tol", "1e-6", "--strict"]) == 1
    assert compare.main([str(a), str(b), "--tol", "1e-5", "--strict"]) == 0


@pytest.mark.parametrize("tol", ["0", "-1e-6", "nan"])
def test_tolerance_must_be_positive_in_process(tmp_path, capsys, tol):
    a = write(tmp_path / "a.json", {"e": seed_block()})
    with pytest.raises(SystemExit) as stop:
        compare.main([str(a), str(a), f"--tol={tol}"])
    assert stop.value.code == 2
    assert f"--tol must be a positive number, got {float(tol)}" in capsys.readouterr().err


def test_missing_run_file_is_named(tmp_path, capsys):
    a = write(tmp_path / "a.json", {"e": seed_block()})
    assert compare.main([str(a), str(tmp_path / "none.json")]) == 2
    assert capsys.readouterr().err == f"compare: {tmp_path / 'none.json'}: run file not found\n"


def test_describe_and_dims_for_messages():
    assert compare.describe(None) == "null" and compare.describe(False) == "a boolean (false)"
    assert compare.describe("x" * 50) == "a string ('xxxxxxxxxxxx...xxxxxxxxxxxxx')"
    assert compare.describe({}) == "an object" and compare.describe(1.5) == "a float"
    assert compare.dims(()) == "a number" and compare.dims((3, 48)) == "a list of shape [3][48]"


def test_an_integer_too_large_for_a_float_is_named():
    with pytest.raises(compare.FormatError) as err:
        compare.flatten([1.0, 10**400], "f: e.losses")
    assert str(err.value) == "f: e.losses[1]: integer too large for a float"


def test_buffers_are_compared_after_the_params_when_there_are_any():
    a, b = seed_block(), seed_block()
    for block, var in ((a, [0.5, 0.25, 1.0, 2.0]), (b, [0.5, 0.25, 1.5, 2.0])):
        block["buffers"] = {"bn.running_mean": [0.0] * 4, "bn.running_var": var}
    rows = compare.compare({"cnn_bn_sgd": a}, {"cnn_bn_sgd": b}, "a", "b")
    assert [(label, n) for label, n, _ in rows[-3:]] == [
        ("cnn_bn_sgd.params.fc.bias", 3),
        ("cnn_bn_sgd.buffers.bn.running_mean", 4),
        ("cnn_bn_sgd.buffers.bn.running_var", 4),
    ]
    assert rows[-1][2] == 0.5
    text = compare.render(rows, 1e-6)
    assert "cnn_bn_sgd.buffers.bn.running_var   n=  4  max|diff|=5.00e-01\n" in text
    assert text.endswith("worst=5.00e-01 tol=1e-06 MISMATCH\n")


def test_empty_or_absent_buffers_add_no_line():
    a, b = seed_block(), seed_block()
    a["buffers"] = b["buffers"] = {}  # a cnn1d run of the pipeline
    assert len(compare.compare({"e": a}, {"e": b}, "a", "b")) == 7
    del a["buffers"]  # the seed's files
    assert len(compare.compare({"e": a}, {"e": b}, "a", "b")) == 7


def test_buffers_missing_from_the_second_file_are_named():
    a, b = seed_block(), seed_block()
    a["buffers"] = {"bn.running_var": [1.0] * 4}
    with pytest.raises(compare.FormatError, match=r"^b: no e\.buffers\.bn\.running_var$"):
        compare.compare({"e": a}, {"e": b}, "a", "b")
    b["buffers"] = [1.0]
    with pytest.raises(compare.FormatError, match=r"b: e\.buffers: expected an object"):
        compare.compare({"e": a}, {"e": b}, "a", "b")


def with_cpu(block: dict, model: str, simd: list[str]) -> dict:
    return block | {"meta": {"cpu": {"model": model, "simd": simd}}}


def test_runs_from_different_cpus_get_a_note_on_stderr(tmp_path):
    """The seed's files record no CPU; runs of one CPU compare without a word; runs of two
    CPUs are said to carry each one's rounding. The output itself stays the seed's."""
    seed_a = write(tmp_path / "pt.json", {"sgd": seed_block()})
    seed_b = write(tmp_path / "burn.json", {"sgd": seed_block(1e-7)})
    proc = run(seed_a, seed_b)
    assert proc.stderr == (
        f"compare: note: {seed_a} and {seed_b} do not record the CPUs they ran on; the"
        " differences may include each CPU's own rounding\n"
    )
    here = write(tmp_path / "a.json", {"sgd": with_cpu(seed_block(), "X", ["avx2", "avx512f"])})
    same = write(tmp_path / "b.json", {"sgd": with_cpu(seed_block(1e-7), "X", ["avx2", "avx512f"])})
    other = write(tmp_path / "c.json", {"sgd": with_cpu(seed_block(1e-7), "Y", ["avx2"])})
    assert run(here, same).stderr == ""
    assert "different CPUs (" in run(here, other).stderr and "Y; avx2)" in run(here, other).stderr
    note = run(here, seed_b).stderr
    assert f"{seed_b} does not record the CPU it ran on" in note
    assert run(here, other).stdout == run(here, same).stdout  # the compare output is unchanged


# --------------------------------------------------------------------------- the CPU note


def on(model: str | None, simd: tuple[str, ...] = ("avx2", "fma")) -> dict:
    meta = {} if model is None else {"cpu": {"model": model, "simd": list(simd)}}
    return {"e": {"meta": meta}}


def test_runs_from_one_cpu_or_one_file_get_no_note():
    assert compare.cpu_note(on("Xeon"), on("Xeon"), "a.json", "b.json") is None
    assert compare.cpu_note(on(None), on(None), "a.json", "a.json") is None  # the same file


def test_runs_from_two_cpus_are_named_with_each_cpu():
    note = compare.cpu_note(on("Xeon"), on("EPYC", ("avx2",)), "a.json", "b.json")
    assert note == (
        "compare: note: the runs came from different CPUs (a.json: Xeon; avx2 fma; b.json:"
        " EPYC; avx2); the differences may include each CPU's own rounding"
    )


@pytest.mark.parametrize(
    ("a", "b", "said"),
    [
        (None, "Xeon", "a.json does not record the CPU it ran on"),
        ("Xeon", None, "b.json does not record the CPU it ran on"),
        (None, None, "a.json and b.json do not record the CPUs they ran on"),
    ],
)
def test_a_run_that_does_not_say_its_cpu_is_named(a, b, said):
    note = compare.cpu_note(on(a), on(b), "a.json", "b.json")
    assert note == f"compare: note: {said}; the differences may include each CPU's own rounding"


def test_the_cpu_of_a_run_is_its_first_experiments():
    assert compare.run_cpu(on("Xeon", ("sse4_2",))) == "Xeon; sse4_2"
    assert compare.run_cpu({}) is None and compare.run_cpu({"e": "not a block"}) is None
