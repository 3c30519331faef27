"""The atlas: optimizer by optimizer, the defaults that differ, what Burn holds and computes
in f32, and the verdicts of the experiments that show it.
"""

from __future__ import annotations

import pandas as pd

from torch_burn_parity.io.parity_io import DTYPES
from torch_burn_parity.models.model_specs import DEFAULT_MODEL
from torch_burn_parity.report import verdict_text as vt
from torch_burn_parity.report.experiment import Experiment
from torch_burn_parity.report.markdown import md_table
from torch_burn_parity.report.what_was_run import BACKEND_NAMES


def burn_backend(x: Experiment) -> str:
    """The Burn backend of an experiment's runs, by Burn's name (meta.backend; Flex without)."""
    found = sorted({x.runs["burn", dt]["meta"].get("backend", "flex") for dt in DTYPES})
    return "/".join(BACKEND_NAMES.get(b, b) for b in found)


def atlas_section(experiments: list[Experiment]) -> str:
    """Optimizer by optimizer: where Burn's defaults differ from PyTorch's, what Burn holds
    and computes in f32, and the verdicts with the same values and with Burn's defaults.

    Read from the experiments of this run on the default model and Burn's default backend
    (cnn1d on Flex): for each optimizer the first experiment with neither kept defaults, a
    schedule nor clipping ("same values"), the first that keeps some of Burn's defaults
    ("Burn's defaults") and the first with a schedule or clipping. A sentence after the
    table names every other experiment (other models or backends) with its verdict.
    """
    default_backend = BACKEND_NAMES["flex"]
    atlas = [
        x for x in experiments if x.model == DEFAULT_MODEL and burn_backend(x) == default_backend
    ]
    others = [x for x in experiments if x not in atlas]
    by_optimizer: dict[str, list[Experiment]] = {}
    for x in atlas:
        by_optimizer.setdefault(x.optimizer, []).append(x)
    rows = []
    for optimizer, members in by_optimizer.items():
        plain = next((x for x in members if x.is_plain), None)
        kept = next((x for x in members if x.spec.keep_defaults.get("burn")), None)
        recipe = next((x for x in members if x.spec.clip_grad is not None or x.has_schedule), None)
        rows.append(
            {
                "optimizer": optimizer,
                "defaults that differ (PyTorch vs Burn)": kept.defaults_that_differ()
                if kept
                else "no experiment keeps Burn's defaults",
                "Burn holds in f32 (rounded value)": plain.diff_names("f32 storage")
                if plain
                else "—",
                "Burn computes in f32": plain.diff_names("precision") if plain else "—",
                **{
                    f"verdict, {kind}": vt.short_verdict(x.record) if x else "—"
                    for kind, x in (
                        ("same values", plain),
                        ("Burn's defaults", kept),
                        ("with a schedule or clipping", recipe),
                    )
                },
            }
        )
    other = (
        "\nOther models and backends (in the verdict table): "
        + "; ".join(
            f"`{x.name}` ({x.model}, {burn_backend(x)}): {x.verdict.label}"
            + (" (evaluation state only)" if vt.evaluation_only(x.record) else "")
            for x in others
        )
        + ".\n"
        if others
        else ""
    )
    table = md_table(pd.DataFrame(rows)) + "\n" if rows else "No such experiment in this run.\n"
    return (
        "## Atlas\n\n"
        f"Each optimizer as this run found it on the model `{DEFAULT_MODEL}` and Burn's"
        f" {default_backend} backend: the hyperparameters whose defaults differ"
        " between the frameworks (from the config diff of the experiment that keeps Burn's"
        " defaults), the values Burn stores in f32 and the arithmetic it does in f32 (from the"
        " config diff of the experiment that passes the same values to both), and the verdicts"
        " of those experiments and of one with a schedule or clipping, each with its largest"
        " cause (all causes and their shares are in the verdict table below).\n\n" + table + other
    )
