"""The log axes' decade labels: plain text in Unicode superscripts, no mathtext."""

from __future__ import annotations

import io
import math

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from torch_burn_parity.report.log_axis import log_y, power_of_ten  # noqa: E402


@pytest.mark.parametrize(
    ("value", "label"),
    [(1e-12, "10⁻¹²"), (1e-6, "10⁻⁶"), (0.1, "10⁻¹"), (1.0, "10⁰"), (10.0, "10¹"),
     (1e20, "10²⁰"), (1e-300, "10⁻³⁰⁰")],
)  # fmt: skip
def test_a_decade_is_ten_with_its_exponent_in_superscripts(value, label):
    assert power_of_ten(value) == label


@pytest.mark.parametrize("value", [2e-3, 5.0, 1.1e-12, 0.0, -1e-6, math.nan, math.inf])
def test_a_value_off_a_decade_or_not_positive_gets_no_label(value):
    assert power_of_ten(value) == ""


def test_a_drawn_log_axis_labels_its_decades_without_mathtext():
    fig, ax = plt.subplots()
    ax.plot([1, 2, 3], [1e-12, 1e-9, 1e-6])
    log_y(ax)
    ax.set_ylim(1e-13, 1e-5)
    fig.savefig(io.BytesIO(), format="png")
    labels = [t.get_text() for t in ax.get_yticklabels() if t.get_text()]
    plt.close(fig)
    assert ax.get_yscale() == "log"
    assert labels and all(label.startswith("10") and "$" not in label for label in labels)
    assert {"10⁻¹²", "10⁻⁹", "10⁻⁶"} <= set(labels)
