# PyTorch ↔ Burn training-parity pipeline: does a port train the same, step for step?
# Stages live in workflow/rules/, programs in workflow/scripts/. See README.md.
from snakemake.utils import min_version, validate

min_version("9.0")


report: "workflow/report/workflow.rst"


# Software comes from the uv-managed environment (uv.lock) and the locked Rust crate
# (rust/Cargo.lock), not from per-rule conda or container directives: `snakemake --lint`
# reports "Specify a conda environment or container for each rule" for that reason only.


configfile: "config.yaml"


validate(config, "workflow/schemas/config.schema.yaml")


include: "workflow/rules/common.smk"
include: "workflow/rules/data.smk"
include: "workflow/rules/build.smk"
include: "workflow/rules/train.smk"
include: "workflow/rules/compare.smk"
include: "workflow/rules/tables.smk"
include: "workflow/rules/analysis.smk"
include: "workflow/rules/report.smk"


rule all:
    input:
        "results/report.md",
        "results/report.html",
