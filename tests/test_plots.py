"""The plots on synthetic step tables: files written, same bytes twice, true titles."""

from __future__ import annotations

import subprocess

import numpy as np
import pandas as pd
import pytest

from conftest import python_module
from torch_burn_parity.judgement import verdict
from torch_burn_parity.report import layers_plot, plots

STEPS = 30
F32_NOISE = np.linspace(2e-8, 5e-7, STEPS)  # a typical f32-vs-f64 gap series


def steps_frame(f64_f64: np.ndarray, dparam: np.ndarray | None = None) -> pd.DataFrame:
    torch_loss = 1.1 * np.exp(-np.arange(STEPS) / 10) + 0.05
    burn_loss = torch_loss + np.geomspace(1e-9, 1e-6, STEPS)
    burn_loss[:3] = torch_loss[:3]  # exact zeros in |Δloss|, as in the first steps of a run
    return pd.DataFrame(
        {
            "step": np.arange(1, STEPS + 1),
            "torch_loss": torch_loss,
            "burn_loss": burn_loss,
            "dloss": np.abs(torch_loss - burn_loss),
            "dparam": F32_NOISE * 1.5 if dparam is None else dparam,
            "torch_f64": F32_NOISE,
            "burn_f64": F32_NOISE * 0.7,
            "f64_f64": f64_f64,
        }
    )


ROUNDING = F32_NOISE * verdict.EPS_RATIO * 3  # well inside SAFETY × rounding
GROWING = np.concatenate([[0.0, 1e-16], np.geomspace(1e-12, 3e-6, STEPS - 2)])


def render(frame: pd.DataFrame, folder, name: str = "exp") -> tuple[bytes, bytes]:
    """Run plots.main on the frame in a fresh folder; return the two PNGs' bytes."""
    folder.mkdir()
    csv = folder / f"steps_{name}.csv"
    frame.to_csv(csv, index=False, float_format="%.17g")
    gaps, losses = folder / f"gaps_{name}.png", folder / f"losses_{name}.png"
    plots.main(["--experiment", name, "--steps", str(csv), "--tol", "1e-6",
                "--tol-f64", "1e-12", "--gaps", str(gaps), "--losses", str(losses)])  # fmt: skip
    return gaps.read_bytes(), losses.read_bytes()


def diverged() -> pd.DataFrame:
    """A run that overflows at step 7: infinite losses and gaps, NaN afterwards."""
    frame = steps_frame(GROWING)
    frame.loc[6, ["burn_loss", "dloss", "dparam", "burn_f64", "f64_f64"]] = np.inf
    frame.loc[7:, ["burn_loss", "dloss", "dparam", "burn_f64", "f64_f64"]] = np.nan
    return frame


@pytest.mark.parametrize(
    "frame",
    [
        steps_frame(ROUNDING),
        # the f32 gap equal to the f64 gap: two series exactly on top of each other
        steps_frame(GROWING, dparam=GROWING.copy()),
        diverged(),
    ],
    ids=["rounding", "identical-series", "diverged"],
)
def test_plots_are_written_and_byte_deterministic(frame, tmp_path):
    first = render(frame, tmp_path / "a")
    second = render(frame, tmp_path / "b")
    for png in first:
        assert png.startswith(b"\x89PNG\r\n\x1a\n") and len(png) > 10_000
    assert first == second


def test_script_gives_the_same_bytes_in_another_process(tmp_path):
    frame = steps_frame(GROWING)
    in_process = render(frame, tmp_path / "a")
    csv, out = tmp_path / "a" / "steps_exp.csv", tmp_path / "b"
    out.mkdir()
    subprocess.run([*python_module("report.plots"), "--experiment", "exp", "--steps", csv,
                    "--tol", "1e-6", "--tol-f64", "1e-12", "--gaps", out / "gaps.png",
                    "--losses", out / "losses.png"], check=True, capture_output=True)  # fmt: skip
    assert ((out / "gaps.png").read_bytes(), (out / "losses.png").read_bytes()) == in_process


def laid_out_figure():
    """A figure as the plots draw them: constrained layout, a log axis, a title, and a
    legend outside the axes that the layout must make room for."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(9, 5), layout="constrained")
    ax.plot(np.arange(1, STEPS + 1), GROWING + 1e-20, label="a gap with a long legend label")
    ax.set_yscale("log")
    ax.set_title("a title, and\na second line")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return fig


def test_save_writes_the_bytes_savefig_writes_and_draws_once(tmp_path, monkeypatch):
    import io

    from matplotlib.figure import Figure

    expected = io.BytesIO()
    laid_out_figure().savefig(expected, format="png", dpi=plots.DPI, metadata=plots.PNG_METADATA,
                              pil_kwargs=dict(plots.PNG_OPTIONS))  # fmt: skip
    draws = []
    draw = Figure.draw
    monkeypatch.setattr(Figure, "draw", lambda fig, renderer: draws.append(draw(fig, renderer)))
    plots.save(laid_out_figure(), tmp_path / "plot.png")
    assert (tmp_path / "plot.png").read_bytes() == expected.getvalue()
    assert len(draws) == 1


def test_plots_differ_when_the_data_differ(tmp_path):
    rounding = render(steps_frame(ROUNDING), tmp_path / "a")
    growing = render(steps_frame(GROWING), tmp_path / "b")
    assert rounding[0] != growing[0]


def test_title_says_rounding_only_when_the_f64_gap_stays_under_the_floor():
    title, subtitle = plots.gap_title("sgd", steps_frame(ROUNDING))
    assert title == "sgd: f64 gap stays under the rounding floor — rounding only"
    assert subtitle.startswith("max f64 gap 2.8e-15, rounding floor at that step 9.3e-14")


def test_title_names_the_step_where_the_f64_gap_leaves_the_floor():
    frame = steps_frame(GROWING)
    floor = verdict.rounding_floor(frame["torch_f64"], frame["burn_f64"])
    step = verdict.first_step_above(GROWING, floor)
    assert step == 3  # 0 and 1e-16 are under the floor, 1e-12 is not
    title, _ = plots.gap_title("adam", frame)
    assert title == (
        "adam: f64 gap leaves the rounding floor at step 3 — an algorithmic difference"
    )


def test_title_names_the_step_a_run_went_non_finite():
    title, _ = plots.gap_title("sgd_lr10", diverged())
    assert title.startswith("sgd_lr10: a run went non-finite at step 7")


def test_loss_title_gives_the_largest_difference_and_its_step():
    frame = steps_frame(ROUNDING)
    assert plots.loss_title("adam", frame)[0] == (
        f"adam: |Δloss| torch vs burn (f32): max {frame['dloss'].max():.2g} at step {STEPS}"
    )
    frame["dloss"] = 0.0
    assert plots.loss_title("adam", frame)[0].endswith("0 at every step — identical losses")
    assert plots.loss_title("sgd_lr10", diverged()) == (
        "sgd_lr10: |Δloss| torch vs burn (f32): non-finite from step 7",
        "before it: max 3.3e-09 at step 6",
    )


def test_exact_zeros_go_to_the_bottom_edge():
    bottom = plots.bottom_edge(GROWING)
    assert bottom < 1e-16
    drawn = plots.on_log_axis(GROWING, bottom)
    assert drawn[0] == bottom and drawn[1] == 1e-16
    assert np.isnan(plots.on_log_axis(np.array([np.inf, -1.0]), bottom)).all()


def test_loss_subtitle_counts_f32_ulps_of_the_loss():
    frame = steps_frame(ROUNDING)
    ulp = float(np.spacing(np.float32(frame["torch_loss"].iloc[-1])))
    frame["dloss"] = ulp
    frame.loc[STEPS - 1, "dloss"] = 90 * ulp
    assert plots.loss_title("adam", frame)[1] == "≈ 90 f32 ulps of the loss at that step"
    assert [plots.count(v) for v in (0.5, 3.24, 28298.0)] == ["0.5", "3.2", "28,000"]


# ------------------------------------------------------------------------------ layers


def layers_frame(first: int | None) -> pd.DataFrame:
    rows = [("forward", "bn", "output"), ("loss", "loss", "loss"),
            ("backward", "bn", "input gradient"), ("backward", "bn.weight", "gradient"),
            ("update", "bn.running_var", "value")]  # fmt: skip
    frame = pd.DataFrame(rows, columns=["phase", "layer", "what"]).assign(
        step=1, max_abs_diff_f32=[1e-7, 0.0, 1e-10, 1e-9, 2e-3],
        max_abs_diff_f64=[1e-16, 0.0, 1e-19, 1e-18, 2e-3], floor=1e-14,
        first_above_floor=[i == first for i in range(len(rows))],
    )  # fmt: skip
    return frame


def test_layer_rows_tell_an_input_gradient_from_an_output():
    assert layers_plot.row_labels(layers_frame(None)) == [
        "bn", "loss", "bn (input)", "bn.weight", "bn.running_var"
    ]  # fmt: skip
    title, _ = layers_plot.layers_title("x", layers_frame(2))
    assert title == "x: the f64 difference enters at bn (input) (backward, step 1)"


def test_the_layers_plot_is_written_with_zeros_and_a_marked_row(tmp_path):
    for first in (None, 4):
        layers_plot.layers_plot(layers_frame(first), "x", tmp_path / f"{first}.png")
    a, b = (tmp_path / f"{first}.png" for first in (None, 4))
    assert a.read_bytes().startswith(b"\x89PNG") and a.read_bytes() != b.read_bytes()


# ------------------------------------------------------------------------------ words


@pytest.fixture
def drawn(monkeypatch):
    """The figures the plots draw, kept for their text (save() writes nothing)."""
    figures = []
    for module in (plots, layers_plot):
        monkeypatch.setattr(module, "save", lambda fig, path: figures.append(fig))
    return figures


def texts(fig) -> list[str]:
    """Every piece of text the figure shows: titles, axis labels, notes, annotations."""
    found = [t.get_text() for t in fig.texts]
    for ax in fig.axes:
        found += [ax.get_title(), ax.get_ylabel(), ax.get_xlabel()]
        found += [t.get_text() for t in ax.texts]
    return [t for t in found if t]


def back_inside(last_above: int) -> np.ndarray:
    """An f64 gap far above the floor for steps 1..last_above, then back within it."""
    return np.where(np.arange(1, STEPS + 1) <= last_above, 1e-6, 0.0)


def test_a_title_tells_when_the_gap_comes_back_within_the_floor(drawn):
    frame = steps_frame(back_inside(20))
    plots.gap_plot(frame, "adagrad", 1e-6, 1e-12, None)
    (fig,) = drawn
    shown = texts(fig)
    assert ("adagrad: f64 gap leaves the rounding floor at step 1, back within it from step 21"
            " — an algorithmic difference") in shown  # fmt: skip
    assert "max |Δ param|" in shown and "f64 gap leaves\nthe floor at step 1" in shown
    # above to the end: no claim of a return; in and out: how often it is above
    assert plots.gap_title("x", steps_frame(back_inside(STEPS)))[0].endswith(
        "at step 1 — an algorithmic difference"
    )
    blinking = np.where(np.arange(STEPS) % 2 == 0, 1e-6, 0.0)
    blinking[-1] = 0.0
    assert plots.back_within(blinking, np.full(STEPS, 1e-9)) == (
        f", back within it from step {STEPS} (above it at {STEPS // 2} of {STEPS} steps)"
    )


def test_a_buffers_only_difference_is_named_as_such_with_its_axis(drawn):
    record = {"model": "cnn_bn", "scope": verdict.EVALUATION}
    plots.gap_plot(steps_frame(back_inside(STEPS)), "cnn_bn_sgd", 1e-6, 1e-12, None, record)
    (fig,) = drawn
    shown = texts(fig)
    assert ("cnn_bn_sgd: buffers leave the rounding floor at step 1, training matches to"
            " rounding") in shown  # fmt: skip
    assert "max |Δ| of parameters and buffers" in shown and "max |Δ param|" not in shown


def test_the_zero_note_sits_in_the_panel_with_the_zeros(drawn):
    frame = pd.concat([layers_frame(None), layers_frame(None).assign(step=100)])
    frame.loc[frame["step"] == 100, ["max_abs_diff_f32", "max_abs_diff_f64"]] = 1e-9
    frame = frame.reset_index(drop=True)
    layers_plot.layers_plot(frame, "x", None)
    (fig,) = drawn
    notes = [[t.get_text() for t in ax.texts] for ax in fig.axes]
    assert "exact 0 drawn on the bottom edge" in notes[0]  # step 1 has the loss's exact 0
    assert "exact 0 drawn on the bottom edge" not in notes[1]  # step 100 has none
