"""Keep a group job's CPU request within what a SLURM node has.

Under the SLURM executor a group job (the jobs of a few experiments, one SLURM job) asks
for the CPUs its jobs would use side by side, up to `--cores`: `--cores 4`, the habit of
local runs, makes it ask a 2-CPU node for 4 and wait in the queue forever
(`PartitionConfig`). The workflow calls `cap_cores` when the run starts: where `--cores`
exceeds the CPUs of the largest node `sinfo` reports, it lowers the limit to that and says
so in one line. The jobs themselves are not slowed: each runs single-threaded.

    python -m torch_burn_parity.tooling.slurm_cores   # the largest node's CPUs
"""

from __future__ import annotations

import subprocess
import sys


def largest_node_cpus() -> int | None:
    """The CPU count of the largest node `sinfo` lists, or None where it cannot say."""
    try:
        out = subprocess.run(
            ["sinfo", "--noheader", "--format=%c"],
            capture_output=True, text=True, timeout=30, check=True,
        ).stdout  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return None
    counts = [int(word.rstrip("+")) for word in out.split() if word.rstrip("+").isdigit()]
    return max(counts) if counts else None


def capped(cores: int | None, node_cpus: int | None) -> tuple[int | None, str | None]:
    """The core limit to use, and the line that says why it was lowered (or None)."""
    if cores is None or node_cpus is None or cores <= node_cpus:
        return cores, None
    return node_cpus, (
        f"--cores {cores}: no SLURM node has more than {node_cpus} CPUs (sinfo); a group job"
        f" asks for at most {node_cpus}, as if --cores {node_cpus} had been given"
    )


def cap_cores(workflow) -> None:
    """Lower the run's core limit to the largest SLURM node's CPUs (SLURM executor only)."""
    plugin = workflow.executor_plugin
    if plugin is None or plugin.name != "slurm":
        return
    limits = workflow.global_resources  # snakemake.resources.Resources
    given = limits.get("_cores")
    cores, line = capped(getattr(given, "value", given), largest_node_cpus())
    if line:
        limits["_cores"] = cores
        print(line, file=sys.stderr)


if __name__ == "__main__":
    print(largest_node_cpus())
