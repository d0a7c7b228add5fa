"""Text classifier: token ids -> Embedding -> LSTM(batch_first) -> Linear on the last step."""

# outcome: ok
# verify-inputs: int64(2, 8)
import torch
from torch import nn

VOCAB = 1000


class TextClassifier(nn.Module):  # verify-target
    def __init__(self, vocab_size: int = VOCAB, dim: int = 32, classes: int = 4) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab_size, dim, padding_idx=0)
        self.lstm = nn.LSTM(dim, 2 * dim, batch_first=True)
        self.head = nn.Linear(2 * dim, classes)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        output, (hidden, _) = self.lstm(self.embed(tokens))
        return self.head(output[:, -1])
