"""pytorch-metric-learning CrossBatchMemory: every step writes the batch's detached embeddings into a fixed-size memory queue by index assignment, then computes a contrastive loss of the batch against the memory slice; the next step overwrites the queue in place after the previous backward."""
# outcome: ok
# source: https://github.com/KevinMusgrave/pytorch-metric-learning/blob/master/src/pytorch_metric_learning/losses/cross_batch_memory.py
# repo: KevinMusgrave/pytorch-metric-learning
# category: iteration
import torch
import torch.nn as nn
import torch.nn.functional as F


# ---- utils/loss_and_miner_utils.py (the two helpers used) ----
class lmu:
    @staticmethod
    def get_all_pairs_indices(labels, ref_labels=None):
        if ref_labels is None:
            ref_labels = labels
        matches = (labels.unsqueeze(1) == ref_labels.unsqueeze(0)).byte()
        diffs = matches ^ 1
        a1_idx, p_idx = torch.where(matches)
        a2_idx, n_idx = torch.where(diffs)
        return a1_idx, p_idx, a2_idx, n_idx

    @staticmethod
    def remove_self_comparisons(indices_tuple, curr_batch_idx, ref_size):
        a1, p, a2, n = indices_tuple
        keep = p != curr_batch_idx[a1]
        return a1[keep], p[keep], a2, n


# ---- losses/contrastive_loss.py (reduced: pair distances against the memory) ----
class ContrastiveLoss(nn.Module):
    def __init__(self, pos_margin=0, neg_margin=1):
        super().__init__()
        self.pos_margin = pos_margin
        self.neg_margin = neg_margin

    def forward(self, embeddings, labels, indices_tuple, ref_emb, ref_labels):
        a1, p, a2, n = indices_tuple
        mat = torch.cdist(F.normalize(embeddings), F.normalize(ref_emb))
        pos_pair_dist = mat[a1, p]
        neg_pair_dist = mat[a2, n]
        pos_loss = F.relu(pos_pair_dist - self.pos_margin)
        neg_loss = F.relu(self.neg_margin - neg_pair_dist)
        pos = pos_loss.mean() if len(pos_loss) else embeddings.sum() * 0
        neg = neg_loss.mean() if len(neg_loss) else embeddings.sum() * 0
        return pos + neg


# ---- losses/cross_batch_memory.py ----
class CrossBatchMemory(nn.Module):
    def __init__(self, loss, embedding_size, memory_size=1024, miner=None, **kwargs):
        super().__init__(**kwargs)
        self.loss = loss
        self.miner = miner
        self.embedding_size = embedding_size
        self.memory_size = memory_size
        self.reset_queue()

    def forward(self, embeddings, labels, indices_tuple=None, enqueue_idx=None):
        if enqueue_idx is not None:
            assert len(enqueue_idx) <= len(self.embedding_memory)
            assert len(enqueue_idx) < len(embeddings)
        else:
            assert len(embeddings) <= len(self.embedding_memory)
        device = embeddings.device
        labels = labels.to(device)
        self.embedding_memory = self.embedding_memory.to(device=device, dtype=embeddings.dtype)
        self.label_memory = self.label_memory.to(device=device, dtype=labels.dtype)

        if enqueue_idx is not None:
            mask = torch.zeros(len(embeddings), device=device, dtype=torch.bool)
            mask[enqueue_idx] = True
            emb_for_queue = embeddings[mask]
            labels_for_queue = labels[mask]
            embeddings = embeddings[~mask]
            labels = labels[~mask]
            do_remove_self_comparisons = False
        else:
            emb_for_queue = embeddings
            labels_for_queue = labels
            do_remove_self_comparisons = True

        batch_size = len(embeddings)
        queue_batch_size = len(emb_for_queue)
        self.add_to_memory(emb_for_queue, labels_for_queue, queue_batch_size)

        if not self.has_been_filled:
            E_mem = self.embedding_memory[: self.queue_idx]
            L_mem = self.label_memory[: self.queue_idx]
        else:
            E_mem = self.embedding_memory
            L_mem = self.label_memory

        indices_tuple = self.create_indices_tuple(
            batch_size,
            embeddings,
            labels,
            E_mem,
            L_mem,
            indices_tuple,
            do_remove_self_comparisons,
        )
        loss = self.loss(embeddings, labels, indices_tuple, E_mem, L_mem)
        return loss

    def add_to_memory(self, embeddings, labels, batch_size):
        self.curr_batch_idx = (
            torch.arange(
                self.queue_idx, self.queue_idx + batch_size, device=labels.device
            )
            % self.memory_size
        )
        self.embedding_memory[self.curr_batch_idx] = embeddings.detach()
        self.label_memory[self.curr_batch_idx] = labels.detach()
        prev_queue_idx = self.queue_idx
        self.queue_idx = (self.queue_idx + batch_size) % self.memory_size
        if (not self.has_been_filled) and (self.queue_idx <= prev_queue_idx):
            self.has_been_filled = True

    def create_indices_tuple(
        self,
        batch_size,
        embeddings,
        labels,
        E_mem,
        L_mem,
        input_indices_tuple,
        do_remove_self_comparisons,
    ):
        if self.miner:
            indices_tuple = self.miner(embeddings, labels, E_mem, L_mem)
        else:
            indices_tuple = lmu.get_all_pairs_indices(labels, L_mem)

        if do_remove_self_comparisons:
            indices_tuple = lmu.remove_self_comparisons(
                indices_tuple, self.curr_batch_idx, self.memory_size
            )

        return indices_tuple

    def reset_queue(self):
        self.embedding_memory = torch.zeros(self.memory_size, self.embedding_size)
        self.label_memory = torch.zeros(self.memory_size).long()
        self.has_been_filled = False
        self.queue_idx = 0


# ---- the library's documented use: a trunk, an embedder, and the memory loss each step ----
if __name__ == "__main__":
    trunk = nn.Sequential(nn.Linear(10, 16), nn.ReLU())
    embedder = nn.Linear(16, 8)
    loss_fn = CrossBatchMemory(loss=ContrastiveLoss(), embedding_size=8, memory_size=12)
    optimizer = torch.optim.SGD(list(trunk.parameters()) + list(embedder.parameters()), lr=0.1)
    for i in range(6):
        data = torch.randn(5, 10)
        labels = torch.randint(0, 3, (5,))
        optimizer.zero_grad()
        embeddings = embedder(trunk(data))
        loss = loss_fn(embeddings, labels)
        loss.backward()
        optimizer.step()
        print(i, loss.item())
