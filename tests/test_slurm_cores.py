"""tooling/slurm_cores.py: a group job never asks for more CPUs than a SLURM node has."""

from __future__ import annotations

from torch_burn_parity.tooling.slurm_cores import capped


def test_cores_above_the_largest_node_are_lowered_to_it_with_one_line():
    cores, line = capped(4, 2)
    assert cores == 2
    assert line == (
        "--cores 4: no SLURM node has more than 2 CPUs (sinfo); a group job asks for at most"
        " 2, as if --cores 2 had been given"
    )


def test_cores_a_node_can_give_are_kept():
    assert capped(2, 2) == (2, None)
    assert capped(1, 64) == (1, None)


def test_without_sinfo_or_a_core_limit_nothing_changes():
    assert capped(4, None) == (4, None)
    assert capped(None, 2) == (None, None)
