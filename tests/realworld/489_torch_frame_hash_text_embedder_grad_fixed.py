"""pytorch-frame's HashTextEmbedder after PR #229: the text embeddings come out with `.detach()`, so the materialized column is plain data and every training batch backpropagates only through its own graph."""
# outcome: ok
# source: https://github.com/pyg-team/pytorch-frame/pull/229
# repo: pyg-team/pytorch-frame
# category: retention
# twin: 488_torch_frame_hash_text_embedder_grad.py
# The PR: "Otherwise, `rtb` training will give us [Trying to backward through the graph a second time]
# in the second training iteration" (the embedder is pre-encoding, not part of the network). The text
# embedder and the mapper are the library's; the table, the model and the mini-batch loop are written
# here to fit (a plain list stands in for the pandas Series).
from typing import Callable, List, Optional

import torch
from torch import Tensor
from torch.nn import Embedding


# ---- torch_frame/testing/text_embedder.py (#229) ----
class HashTextEmbedder:
    r"""A hash-based light-weight text embedder for testing purposes.
    It hashes each sentence into an index modulo :obj:`num_hash` and then
    uses :class:`torch.nn.Embedding` to look up the index to obtain the
    sentence embedding.
    """
    def __init__(self, out_channels: int, num_hash_bins: int = 64,
                 device: Optional[torch.device] = None):
        self.out_channels = out_channels
        self.num_hash_bins = num_hash_bins
        self.device = device
        self.embedding = Embedding(num_hash_bins, out_channels).to(device)

    def __call__(self, sentences: List[str]) -> Tensor:
        idx = torch.LongTensor(
            [hash(s) % self.num_hash_bins for s in sentences],
            device=self.device)
        return self.embedding(idx).detach()


# ---- torch_frame/data/mapper.py ----
class TextEmbeddingTensorMapper:
    r"""Embed any text series into tensor."""
    def __init__(
        self,
        text_embedder: Callable[[List[str]], Tensor],
        batch_size: Optional[int],
    ):
        super().__init__()
        self.text_embedder = text_embedder
        self.batch_size = batch_size

    def forward(
        self,
        ser,
        *,
        device: Optional[torch.device] = None,
    ) -> Tensor:
        ser_list = [str(s) for s in ser]
        if self.batch_size is None:
            emb = self.text_embedder(ser_list)
            return emb.to(device)

        emb_list = []
        for i in range(0, len(ser_list), self.batch_size):
            emb = self.text_embedder(ser_list[i:i + self.batch_size])
            emb_list.append(emb.to(device))
        return torch.cat(emb_list, dim=0)


# ---- a table with a numerical and a text column, materialized once, then trained on ----
class TabularModel(torch.nn.Module):
    def __init__(self, num_cols, text_channels, hidden, out_channels):
        super().__init__()
        self.num_encoder = torch.nn.Linear(num_cols, hidden)
        self.text_encoder = torch.nn.Linear(text_channels, hidden)
        self.head = torch.nn.Sequential(torch.nn.ReLU(), torch.nn.Linear(hidden, out_channels))

    def forward(self, x_num, x_text):
        return self.head(self.num_encoder(x_num) + self.text_encoder(x_text))


if __name__ == "__main__":
    words = ["red", "green", "blue", "cat", "dog", "fish", "big", "small"]
    titles = [" ".join(words[(i * 3 + j) % len(words)] for j in range(3)) for i in range(32)]
    x_num = torch.randn(32, 5)
    y = torch.randn(32, 1)

    mapper = TextEmbeddingTensorMapper(HashTextEmbedder(out_channels=8), batch_size=16)
    x_text = mapper.forward(titles)

    model = TabularModel(num_cols=5, text_channels=8, hidden=16, out_channels=1)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    for epoch in range(2):
        perm = torch.randperm(32)
        for index in perm.split(8):
            pred = model(x_num[index], x_text[index])
            loss = torch.nn.functional.mse_loss(pred, y[index])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        print(epoch, loss.item())
