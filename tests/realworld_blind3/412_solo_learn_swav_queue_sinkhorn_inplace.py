"""solo-learn's SwAV method: the Sinkhorn-Knopp assignments divide Q in place (`Q /= sum_Q`, `Q *= B`) under @torch.no_grad(), the training step shifts the feature queue buffer with slice writes (`self.queue[:, : z.size(1)] = z.detach()`), the prototype gains are set through `.data.fill_(1)`, and the prototype gradients are dropped after backward in the first epoch."""
# outcome: ok
# source: https://github.com/vturrisi/solo-learn/blob/main/solo/methods/swav.py
# repo: vturrisi/solo-learn
# category: iteration
# solo/utils/sinkhorn_knopp.py, solo/losses/swav.py and solo/methods/swav.py (without the cfg
# checks); BaseMethod, the Lightning module it builds on, is a stand-in here with the parts SwAV
# calls (a small CNN backbone, the online linear classifier on detached features, the per-crop
# forward), and a plain loop plays the Trainer: training_step, backward, on_after_backward, step.
from types import SimpleNamespace as NS
from typing import Any, Dict, List, Sequence

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F


# ---- solo/utils/sinkhorn_knopp.py ----
class SinkhornKnopp(torch.nn.Module):
    def __init__(self, num_iters: int = 3, epsilon: float = 0.05, world_size: int = 1):
        """Approximates optimal transport using the Sinkhorn-Knopp algorithm.

        A simple iterative method to approach the double stochastic matrix is to alternately rescale
        rows and columns of the matrix to sum to 1.

        Args:
            num_iters (int, optional):  number of times to perform row and column normalization.
                Defaults to 3.
            epsilon (float, optional): weight for the entropy regularization term. Defaults to 0.05.
            world_size (int, optional): number of nodes for distributed training. Defaults to 1.
        """

        super().__init__()
        self.num_iters = num_iters
        self.epsilon = epsilon
        self.world_size = world_size

    @torch.no_grad()
    def forward(self, Q: torch.Tensor) -> torch.Tensor:
        """Produces assignments using Sinkhorn-Knopp algorithm.

        Applies the entropy regularization, normalizes the Q matrix and then normalizes rows and
        columns in an alternating fashion for num_iter times. Before returning it normalizes again
        the columns in order for the output to be an assignment of samples to prototypes.

        Args:
            Q (torch.Tensor): cosine similarities between the features of the
                samples and the prototypes.

        Returns:
            torch.Tensor: assignment of samples to prototypes according to optimal transport.
        """

        Q = torch.exp(Q / self.epsilon).t()
        B = Q.shape[1] * self.world_size
        K = Q.shape[0]  # num prototypes

        # make the matrix sums to 1
        sum_Q = torch.sum(Q)
        if dist.is_available() and dist.is_initialized():
            dist.all_reduce(sum_Q)
        Q /= sum_Q

        for _ in range(self.num_iters):
            # normalize each row: total weight per prototype must be 1/K
            sum_of_rows = torch.sum(Q, dim=1, keepdim=True)
            if dist.is_available() and dist.is_initialized():
                dist.all_reduce(sum_of_rows)
            Q /= sum_of_rows
            Q /= K

            # normalize each column: total weight per sample must be 1/B
            Q /= torch.sum(Q, dim=0, keepdim=True)
            Q /= B

        Q *= B  # the colomns must sum to 1 so that Q is an assignment
        return Q.t()


# ---- solo/losses/swav.py ----
def swav_loss_func(
    preds: List[torch.Tensor], assignments: List[torch.Tensor], temperature: float = 0.1
) -> torch.Tensor:
    """Computes SwAV's loss given list of batch predictions from multiple views
    and a list of cluster assignments from the same multiple views.

    Args:
        preds (torch.Tensor): list of NxC Tensors containing nearest neighbors' features from
            view 1.
        assignments (torch.Tensor): list of NxC Tensor containing predicted features from view 2.
        temperature (torch.Tensor): softmax temperature for the loss. Defaults to 0.1.

    Returns:
        torch.Tensor: SwAV loss.
    """

    losses = []
    for v1, a in enumerate(assignments):
        for v2 in np.delete(np.arange(len(preds)), v1):
            p = preds[v2] / temperature
            loss = -torch.mean(torch.sum(a * torch.log_softmax(p, dim=1), dim=1))
            losses.append(loss)
    return sum(losses) / len(losses)


# ---- stand-in for solo/methods/base.py (BaseMethod, a LightningModule) ----
class BaseMethod(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.backbone = nn.Sequential(
            nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
            nn.AdaptiveAvgPool2d(1), nn.Flatten(),
        )
        self.features_dim = 8
        self.num_classes = cfg.data.num_classes
        self.classifier = nn.Linear(self.features_dim, self.num_classes)
        self.num_large_crops = cfg.data.num_large_crops
        self.num_small_crops = 0
        self.num_crops = self.num_large_crops
        self.current_epoch = 0
        self.trainer = None
        self.device = torch.device("cpu")

    @property
    def learnable_params(self) -> List[Dict[str, Any]]:
        return [
            {"name": "backbone", "params": self.backbone.parameters()},
            {"name": "classifier", "params": self.classifier.parameters()},
        ]

    def forward(self, X) -> Dict:
        feats = self.backbone(X)
        logits = self.classifier(feats.detach())
        return {"logits": logits, "feats": feats}

    def multicrop_forward(self, X: torch.Tensor) -> Dict[str, Any]:
        feats = self.backbone(X)
        return {"feats": feats}

    def _base_shared_step(self, X: torch.Tensor, targets: torch.Tensor) -> Dict:
        out = self(X)
        logits = out["logits"]
        loss = F.cross_entropy(logits, targets, ignore_index=-1)
        out.update({"loss": loss})
        return out

    def training_step(self, batch: List[Any], batch_idx: int) -> Dict[str, Any]:
        _, X, targets = batch
        X = [X] if isinstance(X, torch.Tensor) else X
        outs = [self._base_shared_step(x, targets) for x in X[: self.num_large_crops]]
        outs = {k: [out[k] for out in outs] for k in outs[0].keys()}
        outs["loss"] = sum(outs["loss"]) / self.num_large_crops
        return outs

    def log(self, *args, **kwargs):
        pass


# ---- solo/methods/swav.py ----
class SwAV(BaseMethod):
    def __init__(self, cfg):
        """Implements SwAV (https://arxiv.org/abs/2006.09882).

        Extra cfg settings:
            method_kwargs:
                proj_output_dim (int): number of dimensions of the projected features.
                proj_hidden_dim (int): number of neurons in the hidden layers of the projector.
                num_prototypes (int): number of prototypes.
                sk_iters (int): number of iterations for the sinkhorn-knopp algorithm.
                sk_epsilon (float): weight for the entropy regularization term.
                temperature (float): temperature for the softmax normalization.
                queue_size (int): number of samples to hold in the queue.
                epoch_queue_starts (int): epochs the queue starts.
                freeze_prototypes_epochs (int): number of epochs during which
                    the prototypes are frozen.
        """

        super().__init__(cfg)

        self.proj_output_dim: int = cfg.method_kwargs.proj_output_dim
        self.sk_iters: int = cfg.method_kwargs.sk_iters
        self.sk_epsilon: float = cfg.method_kwargs.sk_epsilon
        self.temperature: float = cfg.method_kwargs.temperature
        self.queue_size: int = cfg.method_kwargs.queue_size
        self.epoch_queue_starts: int = cfg.method_kwargs.epoch_queue_starts
        self.freeze_prototypes_epochs: int = cfg.method_kwargs.freeze_prototypes_epochs

        proj_hidden_dim: int = cfg.method_kwargs.proj_hidden_dim
        proj_output_dim: int = cfg.method_kwargs.proj_output_dim
        num_prototypes: int = cfg.method_kwargs.num_prototypes

        # projector
        self.projector = nn.Sequential(
            nn.Linear(self.features_dim, proj_hidden_dim),
            nn.BatchNorm1d(proj_hidden_dim),
            nn.ReLU(),
            nn.Linear(proj_hidden_dim, proj_output_dim),
        )

        # prototypes
        self.prototypes = nn.utils.weight_norm(
            nn.Linear(proj_output_dim, num_prototypes, bias=False)
        )
        self.prototypes.weight_g.data.fill_(1)  # type: ignore
        self.prototypes.weight_g.requires_grad = False

    @property
    def learnable_params(self) -> List[dict]:
        """Adds projector and prototypes parameters to the parent's learnable parameters.

        Returns:
            List[dict]: list of learnable parameters.
        """

        extra_learnable_params = [
            {"name": "projector", "params": self.projector.parameters()},
            {"name": "prototypes", "params": self.prototypes.parameters()},
        ]
        return super().learnable_params + extra_learnable_params

    def on_train_start(self):
        """Gets the world size and sets it in the sinkhorn and the queue."""
        # sinkhorn-knopp needs the world size
        world_size = self.trainer.world_size if self.trainer else 1
        self.sk = SinkhornKnopp(self.sk_iters, self.sk_epsilon, world_size)
        # queue also needs the world size
        if self.queue_size > 0:
            self.register_buffer(
                "queue",
                torch.zeros(
                    2,
                    self.queue_size // world_size,
                    self.proj_output_dim,
                    device=self.device,
                ),
            )

    def forward(self, X: torch.Tensor) -> Dict[str, Any]:
        """Performs the forward pass of the backbone, the projector and the prototypes.

        Args:
            X (torch.Tensor): a batch of images in the tensor format.

        Returns:
            Dict[str, Any]:
                a dict containing the outputs of the parent,
                the projected features and the logits.
        """

        out = super().forward(X)
        z = self.projector(out["feats"])
        z = F.normalize(z)
        p = self.prototypes(z)
        out.update({"z": z, "p": p})
        return out

    def multicrop_forward(self, X: torch.Tensor) -> Dict[str, Any]:
        """Performs the forward pass of the backbone, the projector and the prototypes.

        Args:
            X (torch.Tensor): a batch of images in the tensor format.

        Returns:
            Dict[str, Any]:
                a dict containing the outputs of the parent,
                the projected features and the logits.
        """

        out = super().multicrop_forward(X)
        z = self.projector(out["feats"])
        z = F.normalize(z)
        p = self.prototypes(z)
        out.update({"z": z, "p": p})
        return out

    @torch.no_grad()
    def get_assignments(self, preds: List[torch.Tensor]) -> List[torch.Tensor]:
        """Computes cluster assignments from logits, optionally using a queue.

        Args:
            preds (List[torch.Tensor]): a batch of logits.

        Returns:
            List[torch.Tensor]: assignments for each sample in the batch.
        """

        bs = preds[0].size(0)
        assignments = []
        for i, p in enumerate(preds):
            # optionally use the queue
            if self.queue_size > 0 and self.current_epoch >= self.epoch_queue_starts:
                p_queue = self.prototypes(self.queue[i])  # type: ignore
                p = torch.cat((p, p_queue))
            # compute assignments with sinkhorn-knopp
            assignments.append(self.sk(p)[:bs])
        return assignments

    def training_step(self, batch: Sequence[Any], batch_idx: int) -> torch.Tensor:
        """Training step for SwAV reusing BaseMethod training step.

        Args:
            batch (Sequence[Any]): a batch of data in the format of [img_indexes, [X], Y], where
                [X] is a list of size num_crops containing batches of images.
            batch_idx (int): index of the batch.

        Returns:
            torch.Tensor: total loss composed of SwAV loss and classification loss.
        """

        out = super().training_step(batch, batch_idx)
        class_loss = out["loss"]
        preds = out["p"]

        # ------- swav loss -------
        assignments = self.get_assignments(preds[: self.num_large_crops])
        swav_loss = swav_loss_func(preds, assignments, self.temperature)

        # ------- update queue -------
        if self.queue_size > 0:
            z = torch.stack(out["z"][: self.num_large_crops])
            self.queue[:, z.size(1) :] = self.queue[:, : -z.size(1)].clone()
            self.queue[:, : z.size(1)] = z.detach()

        self.log("train_swav_loss", swav_loss, on_epoch=True, sync_dist=True)

        return swav_loss + class_loss

    def on_after_backward(self):
        """Zeroes the gradients of the prototypes."""
        if self.current_epoch < self.freeze_prototypes_epochs:
            for p in self.prototypes.parameters():
                p.grad = None


if __name__ == "__main__":
    cfg = NS(
        data=NS(num_classes=10, num_large_crops=2),
        method_kwargs=NS(proj_output_dim=16, proj_hidden_dim=32, num_prototypes=20,
                         sk_iters=3, sk_epsilon=0.05, temperature=0.1, queue_size=16,
                         epoch_queue_starts=0, freeze_prototypes_epochs=1),
    )
    model = SwAV(cfg)
    params = [p for group in model.learnable_params for p in group["params"]]
    optimizer = torch.optim.SGD(params, lr=0.1, momentum=0.9)
    model.on_train_start()
    for model.current_epoch in range(2):
        for batch_idx in range(2):
            X = [torch.rand(4, 3, 16, 16), torch.rand(4, 3, 16, 16)]
            targets = torch.randint(0, 10, (4,))
            loss = model.training_step((torch.arange(4), X, targets), batch_idx)
            optimizer.zero_grad()
            loss.backward()
            model.on_after_backward()
            optimizer.step()
            print(model.current_epoch, batch_idx, loss.item())
