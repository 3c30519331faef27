"""One experiment's files as the report reads them: its tables, runs and verdict record (the
section that says what they show is experiment.py's)."""

from __future__ import annotations

from pathlib import Path

from torch_burn_parity.analysis import gaps
from torch_burn_parity.config.spec import Spec
from torch_burn_parity.io.parity_io import (
    DTYPES,
    RUNS,
    FormatError,
    experiment_block,
    read_table,
    read_text,
)
from torch_burn_parity.judgement.judge import has_factors, verdict_of
from torch_burn_parity.models.model_specs import model_of


def dataset_shapes(paths: list[Path]) -> list[dict[str, list[int]]]:
    """Each dataset file's parameter and buffer shapes, in the model's order."""
    return [gaps.dataset_shapes(path) for path in paths]


def shapes_of(block: dict, datasets: list[dict[str, list[int]]], where: Path) -> dict:
    """The shapes of the dataset that holds exactly the arrays of the run's model."""
    model = model_of(block)
    for shapes in datasets:
        if set(shapes) == set(model.state_names):
            return {name: shapes[name] for name in model.state_names}  # param_matrix's order
    raise FormatError(f"{where}: no dataset file given holds the arrays of model {model.name}")


class ExperimentFiles:
    """Everything the report reads about one experiment, from the pipeline's files."""

    def __init__(
        self, name: str, spec: Spec, results: Path, tolerances: dict,
        datasets: list[dict[str, list[int]]], report_steps: list[int], record: dict,
        description: str = "",
    ) -> None:  # fmt: skip
        """spec: the experiment's resolved spec (results/specs/{name}.json, config/spec.py);
        datasets: the parameter and buffer shapes of each dataset file (dataset_shapes);
        record: the experiment's verdict record (judgement/judge.py); description: the
        config's words for it."""
        tables = results / "tables"
        self.name, self.spec, self.tolerances = name, spec, tolerances
        self.description = description
        self.report_steps = report_steps
        self.steps = read_table(tables / f"steps_{name}.csv")
        self.config_diff = read_table(tables / f"config_diff_{name}.csv", keep_default_na=False)
        self.replay = read_table(tables / f"replay_{name}.csv")
        self.counterfactual = read_table(tables / f"counterfactual_{name}.csv")
        self.probe = read_table(tables / f"probe_{name}.csv")
        pairs = set(zip(self.probe["framework"], self.probe["dtype"], strict=True))
        if pairs != set(RUNS):
            raise FormatError(f"{tables / f'probe_{name}.csv'}: expected one row per run")
        self.lrs = read_table(tables / f"lrs_{name}.csv")
        self.md = {
            key: read_text(tables / f"{key}_{name}.md")
            for key in ("steps", "config_diff", "replay", "counterfactual", "probe", "lrs")
        }
        self.compare = {dt: read_text(results / "compare" / f"{name}-{dt}.txt") for dt in DTYPES}
        self.runs = {
            (fw, dt): experiment_block(results / "runs" / name / f"{fw}-{dt}.json", name)
            for fw, dt in RUNS
        }
        self.shapes = shapes_of(self.runs["torch", "f32"], datasets, results / "runs" / name)
        # The layer record (runs from trainers that take it): where the difference enters.
        self.has_layers = all("layers" in run for run in self.runs.values())
        if self.has_layers:
            self.layers = read_table(tables / f"layers_{name}.csv")
            self.md["layers"] = read_text(tables / f"layers_{name}.md")
        # The judgement, made once by judgement/judge.py: verdict, causes, where it starts.
        self.record = record
        # The record of the experiment passing PyTorch's values to both (report.py pairs).
        self.paired: dict | None = None
        self.proof: dict | None = None  # the record of its proving run (config/proving.py)
        self.verdict = verdict_of(record)
        self.causes = [(c["cause"], c["share"], c["how"]) for c in record["causes"]]

    @property
    def has_factors(self) -> bool:
        return has_factors(self.config_diff)

    @property
    def model(self) -> str:
        return model_of(self.runs["torch", "f32"]).name

    @property
    def buffer_names(self) -> tuple[str, ...]:
        return model_of(self.runs["torch", "f32"]).buffer_names

    @property
    def has_schedule(self) -> bool:
        return self.spec.schedule["kind"] != "constant"

    @property
    def is_plain(self) -> bool:
        """The same values passed to both, no schedule, no clipping: the atlas's baseline."""
        return (
            not any(self.spec.keep_defaults.values())
            and not self.has_schedule
            and self.spec.clip_grad is None
        )

    def diff_names(self, status: str) -> str:
        """The config-diff rows with this status, by name ('none' if there are none)."""
        rows = self.config_diff[self.config_diff["status"] == status]
        return ", ".join(rows["hyperparameter"]) or "none"

    def defaults_that_differ(self) -> str:
        """Kept defaults of Burn that differ from PyTorch's, with both values."""
        d = self.config_diff
        rows = d[(d["status"] == "differs") & d["note"].str.contains("keeps its default")]
        return (
            ", ".join(f"{r.hyperparameter} ({r.torch} vs {r.burn})" for r in rows.itertuples())
            or "none"
        )

    @property
    def optimizer(self) -> str:
        return self.runs["torch", "f32"]["meta"]["optimizer"]

    @property
    def step_count(self) -> int:
        """How many steps the runs trained (the tables hold the recorded ones)."""
        return len(self.runs["torch", "f32"]["losses"])
