"""Write the weights and data of the two language-model ports, GPT-2 and Llama, as a user
would from their own project:

    uv run python examples/ports/make_language_model_files.py

Each model is the transformers class its experiment in examples/ports/config.yaml names,
built from the config class and keyword arguments given there, so that the weights and
the pipeline's module cannot drift apart.

weights.safetensors: the model at torch.manual_seed(0) (transformers' own init), its
parameters as named_parameters() names them, F32: a parameter tied under two names (GPT-2's
lm_head.weight is transformer.wte.weight) is written once, under the first.
data.safetensors: x [64, T] I64, the first 64 blocks of T characters (the model's context) of
the project's text (The Devil's Dictionary, 84 characters: datasets/text.py) as token ids;
y [64, T] I64, each position's next character.
"""

import importlib
from pathlib import Path

import torch
import yaml
from safetensors.torch import save_file

from torch_burn_parity.datasets import text

HERE = Path(__file__).resolve().parent
EXPERIMENTS = ("gpt2_adamw", "llama_adamw")
SAMPLES = 64


def imported(path: str) -> type:
    where, _, name = path.partition(":")
    return getattr(importlib.import_module(where), name)


def write(model: dict) -> None:
    side = model["torch"]
    config = imported(side["config"])(**side["kwargs"])
    torch.manual_seed(0)
    module = imported(side["module"])(config)
    weights = {name: p.detach().contiguous() for name, p in module.named_parameters()}
    save_file(weights, model["init"])
    context = getattr(config, "n_positions", None) or config.max_position_embeddings
    x, y = text.arrays(context)
    n = SAMPLES * context
    ids = {"x": x[:n], "y": y[:n]}
    save_file(
        {k: torch.tensor(v, dtype=torch.int64).reshape(SAMPLES, context) for k, v in ids.items()},
        model["data"],
    )
    count = sum(w.numel() for w in weights.values())
    print(f"wrote {model['init']} ({count:,} parameters) and {model['data']}")


def main() -> None:
    experiments = yaml.safe_load((HERE / "config.yaml").read_text())["experiments"]
    for name in EXPERIMENTS:
        write(experiments[name]["model"])


if __name__ == "__main__":
    main()
