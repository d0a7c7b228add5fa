"""Stand-in for lightning.pytorch (see ../../README.md)."""

from pytorch_lightning import LightningModule, Trainer, seed_everything

__all__ = ["LightningModule", "Trainer", "seed_everything"]
