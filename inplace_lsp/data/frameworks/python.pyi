"""Libraries whose calls give Python values: numbers, strings, containers, NumPy arrays,
argument namespaces, environments that return them. Never torch tensors: a value one of them
gives is not saved for backward, has no graph, and accumulating it keeps nothing alive (its
attributes, items and methods' results are Python values too).

Read by inplace_lsp.analysis.frameworks. Not code to run.
"""

__stands_for__ = (
    "argparse",
    "datetime",
    "gym",
    "gymnasium",
    "hydra",
    "json",
    "logging",
    "math",
    "matplotlib",
    "numpy",
    "omegaconf",
    "os",
    "pandas",
    "pathlib",
    "pickle",
    "random",
    "re",
    "scipy",
    "sklearn",
    "sys",
    "time",
    "tqdm",
    "tyro",
    "wandb",
    "yaml",
)
__drivers__ = ()
__python_values__ = True
