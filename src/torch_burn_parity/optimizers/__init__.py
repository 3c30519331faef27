"""The optimizers both frameworks run, one entry each (base.Optimizer), like the models.

Everything else reads them from here: the config's keys and checks, the PyTorch trainer's
classes, the config diff's facts. No PyTorch import: the config check runs without it.
"""

from torch_burn_parity.optimizers import adagrad, adam, adamw, muon, rmsprop, sgd
from torch_burn_parity.optimizers.base import Optimizer

REGISTRY: dict[str, Optimizer] = {
    module.OPTIMIZER.name: module.OPTIMIZER for module in (sgd, adam, adamw, adagrad, rmsprop, muon)
}
