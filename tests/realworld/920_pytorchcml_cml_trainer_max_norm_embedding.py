"""PyTorchCML's CMLTrainer fitting CollaborativeMetricLearning with SumTripletLoss: both item lookups go through an nn.Embedding(max_norm=1), whose forward renormalises the weight in place on each call, and the loop keeps `accum_loss += loss.item()`."""
# outcome: ok
# source: https://github.com/hand10ryo/PyTorchCML/blob/06374e7d7c6a06d657627005f50752e733e425af/src/PytorchCML/trainers/CMLTrainer.py
# repo: hand10ryo/PyTorchCML
# category: iteration
from typing import Optional

import numpy as np
import torch
from torch import nn, optim
from torch.distributions.categorical import Categorical
from tqdm import tqdm


# ---- src/PytorchCML/models/BaseEmbeddingModel.py ----
class BaseEmbeddingModel(nn.Module):
    def __init__(self, n_user: int, n_item: int, n_dim: int = 20, max_norm: Optional[float] = 1,
                 user_embedding_init: Optional[torch.Tensor] = None,
                 item_embedding_init: Optional[torch.Tensor] = None):
        super().__init__()
        self.n_user = n_user
        self.n_item = n_item
        self.n_dim = n_dim
        self.max_norm = max_norm

        if user_embedding_init is None:
            self.user_embedding = nn.Embedding(
                n_user, n_dim, sparse=False, max_norm=max_norm)

        else:
            self.user_embedding = nn.Embedding.from_pretrained(
                user_embedding_init)
            self.user_embedding.weight.requires_grad = True

        if item_embedding_init is None:
            self.item_embedding = nn.Embedding(
                n_item, n_dim, sparse=False, max_norm=max_norm)
        else:
            self.item_embedding = nn.Embedding.from_pretrained(
                item_embedding_init)
            self.item_embedding.weight.requires_grad = True


# ---- src/PytorchCML/models/CollaborativeMetricLearning.py ----
class CollaborativeMetricLearning(BaseEmbeddingModel):
    def forward(
        self, users: torch.Tensor, pos_items: torch.Tensor, neg_items: torch.Tensor
    ) -> torch.Tensor:
        # get enmbeddigs
        user_emb = self.user_embedding(users)
        pos_item_emb = self.item_embedding(pos_items)
        neg_item_emb = self.item_embedding(neg_items)

        # compute distance  dist = torch.cdist(u_emb, i_emb)

        return user_emb, pos_item_emb, neg_item_emb


# ---- src/PytorchCML/losses/BaseTripletLoss.py ----
class BaseTripletLoss(nn.Module):
    """Class of Abstract Loss for Triplet"""

    def __init__(self, margin: float = 1, regularizers: list = []):
        super().__init__()
        self.margin = margin
        self.ReLU = nn.ReLU()
        self.regularizers = regularizers

    def regularize(self, embeddings_dict: dict):
        reg = 0
        for regularizer in self.regularizers:
            reg += regularizer(embeddings_dict)

        return reg


# ---- src/PytorchCML/losses/SumTripletLoss.py ----
class SumTripletLoss(BaseTripletLoss):
    """Class of Triplet Loss taking sum of negative sample."""

    def __init__(self, margin: float = 1, regularizers: list = []):
        super().__init__(margin, regularizers)

    def forward(
        self,
        user_emb: torch.Tensor,
        pos_item_emb: torch.Tensor,
        neg_item_emb: torch.Tensor,
    ) -> torch.Tensor:
        embeddings_dict = {
            "user_emb": user_emb,
            "pos_item_emb": pos_item_emb,
            "neg_item_emb": neg_item_emb,
        }

        pos_dist = torch.cdist(user_emb, pos_item_emb)
        neg_dist = torch.cdist(user_emb, neg_item_emb)

        tripletloss = self.ReLU(self.margin + pos_dist ** 2 - neg_dist ** 2)
        loss = torch.mean(tripletloss)
        reg = self.regularize(embeddings_dict)

        return loss + reg


# ---- src/PytorchCML/samplers/BaseSampler.py (strict_negative branch and its csr_matrix left out) ----
class BaseSampler:
    def __init__(
        self,
        train_set: np.ndarray,
        n_user: Optional[int] = None,
        n_item: Optional[int] = None,
        pos_weight: Optional[np.ndarray] = None,
        neg_weight: Optional[np.ndarray] = None,
        device: Optional[torch.device] = None,
        batch_size: int = 256,
        n_neg_samples: int = 10,
        strict_negative: bool = False,
    ):
        self.train_set = torch.LongTensor(train_set).to(device)
        self.n_neg_samples = n_neg_samples
        self.batch_size = batch_size
        if n_user is None:
            self.n_user = np.unique(train_set[:, 0]).shape[0]
        else:
            self.n_user = n_user

        if n_user is None:
            self.n_item = np.unique(train_set[:, 1]).shape[0]
        else:
            self.n_item = n_item
        self.device = device
        self.strict_negative = strict_negative
        self.two_stage = False

        # device
        if device is None:
            device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")

        # set pos weight
        if pos_weight is not None:  # weighted
            if len(pos_weight) == len(train_set):
                pos_weight_pair = pos_weight

            elif len(pos_weight) == self.n_item:
                pos_weight_pair = pos_weight[train_set[:, 1]]

            elif len(pos_weight) == self.n_user:
                pos_weight_pair = pos_weight[train_set[:, 0]]

            else:
                raise NotImplementedError

        else:  # uniform
            pos_weight_pair = torch.ones(train_set.shape[0])

        self.pos_weight_pair = torch.Tensor(pos_weight_pair).to(device)
        self.pos_sampler = Categorical(probs=self.pos_weight_pair)

        # set neg weight
        if neg_weight is None:  # uniorm
            neg_weight_item = np.ones(self.n_item)
        elif len(neg_weight) == self.n_item:  # weighted
            neg_weight_item = neg_weight
        else:
            raise NotImplementedError

        self.neg_weight_item = torch.Tensor(neg_weight_item).to(device)
        self.neg_sampler = Categorical(probs=self.neg_weight_item)

    def get_pos_batch(self) -> torch.Tensor:
        batch_indices = self.pos_sampler.sample([self.batch_size])
        batch = self.train_set[batch_indices]
        return batch

    def get_neg_batch(self, users: torch.Tensor) -> torch.Tensor:
        return self.neg_sampler.sample([self.batch_size, self.n_neg_samples])


# ---- src/PytorchCML/trainers/BaseTrainer.py + CMLTrainer.py (validation evaluator left out) ----
class BaseTrainer:
    def __init__(self, model, optimizer, criterion, sampler):
        self.model = model
        self.optimizer = optimizer
        self.criterion = criterion
        self.sampler = sampler


class CMLTrainer(BaseTrainer):
    def fit(
        self,
        n_batch: int = 500,
        n_epoch: int = 10,
        valid_evaluator=None,
        valid_per_epoch: int = 5,
    ):
        # start training
        for ep in range(n_epoch):
            accum_loss = 0

            # start mini-batch
            with tqdm(range(n_batch), total=n_batch) as pbar:
                for b in pbar:
                    # batch sampling
                    batch = self.sampler.get_pos_batch()
                    users = batch[:, 0:1]
                    pos_items = batch[:, 1:]

                    if self.sampler.two_stage:
                        neg_candidates = self.sampler.get_and_set_candidates()
                        dist = self.model.spreadout_distance(pos_items, neg_candidates)
                        self.sampler.set_candidates_weight(dist, self.model.n_dim)

                    neg_items = self.sampler.get_neg_batch(users.reshape(-1))

                    # initialize gradient
                    self.model.zero_grad()

                    # compute distance
                    user_emb, pos_item_emb, neg_item_emb = self.model(
                        users, pos_items, neg_items
                    )

                    # compute loss
                    loss = self.criterion(user_emb, pos_item_emb, neg_item_emb)
                    accum_loss += loss.item()

                    # gradient of loss
                    loss.backward()

                    # update model parameters
                    self.optimizer.step()

                    pbar.set_description_str(
                        f"epoch{ep+1} avg_loss:{accum_loss / (b+1) :.3f}"
                    )


if __name__ == "__main__":
    # README usage, with a random implicit-feedback train set instead of MovieLens
    n_user, n_item, n_dim = 20, 30, 8
    train_set = np.stack([np.random.randint(0, n_user, 100), np.random.randint(0, n_item, 100)], 1)
    device = torch.device("cpu")

    model = CollaborativeMetricLearning(n_user, n_item, n_dim).to(device)
    optimizer = optim.Adam(model.parameters(), lr=1e-3)
    criterion = SumTripletLoss(margin=1).to(device)
    sampler = BaseSampler(train_set, n_user, n_item, device=device, batch_size=16)

    trainer = CMLTrainer(model, optimizer, criterion, sampler)
    trainer.fit(n_batch=3, n_epoch=2)
