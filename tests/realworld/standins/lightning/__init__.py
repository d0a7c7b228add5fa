"""Stand-in for lightning (see ../README.md): `import lightning as L`, `L.LightningModule`."""

from pytorch_lightning import LightningModule, Trainer, seed_everything

__all__ = ["LightningModule", "Trainer", "seed_everything"]
