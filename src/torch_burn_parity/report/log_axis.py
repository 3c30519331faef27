"""A log axis whose decades are labelled in plain text, 10⁻¹² in Unicode superscripts.

matplotlib labels a log axis's decades with mathtext (`$\\mathdefault{10^{-12}}$`), and its
mathtext parser keeps its cache per renderer: every PNG parsed its labels afresh, about
9 ms each, some 25 labels per experiment's three plots. The same labels as plain text are
drawn from the font's glyphs; the figures are otherwise the same.
"""

from __future__ import annotations

import math

from matplotlib.ticker import FuncFormatter

SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


def power_of_ten(value: float, _position: int | None = None) -> str:
    """'10⁻¹²' at 1e-12, '10⁰' at 1; '' anywhere else (a log axis puts its major ticks on
    decades; a value off one, or not positive, gets no label)."""
    if not value > 0 or not math.isfinite(value):
        return ""
    exponent = round(math.log10(value))
    if not math.isclose(value, 10.0**exponent, rel_tol=1e-9):
        return ""
    return "10" + str(exponent).translate(SUPERSCRIPT)


def log_y(ax) -> None:
    """Put `ax`'s y axis on a log scale labelled by power_of_ten."""
    ax.set_yscale("log")
    ax.yaxis.set_major_formatter(FuncFormatter(power_of_ten))
