"""A seq2seq training step: encoder and decoder, one loss, one backward() and one optimizer step after it."""
# outcome: ok
import torch
import torch.nn as nn


class Seq2Seq(nn.Module):
    def __init__(self, vocab: int = 11, hidden: int = 8):
        super().__init__()
        self.embed = nn.Embedding(vocab, hidden)
        self.encoder = nn.GRU(hidden, hidden, batch_first=True)
        self.decoder = nn.GRU(hidden, hidden, batch_first=True)
        self.out = nn.Linear(hidden, vocab)

    def forward(self, src, tgt):
        _, state = self.encoder(self.embed(src))
        decoded, _ = self.decoder(self.embed(tgt), state)
        return self.out(decoded)


def train_step(model, optimizer, criterion, src, tgt):
    optimizer.zero_grad()
    logits = model(src, tgt[:, :-1])
    loss = criterion(logits.reshape(-1, logits.size(-1)), tgt[:, 1:].reshape(-1))
    loss.backward()
    optimizer.step()
    return loss.item()


def run() -> None:
    torch.manual_seed(0)
    model = Seq2Seq()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    criterion = nn.CrossEntropyLoss()
    src, tgt = torch.randint(0, 11, (2, 5)), torch.randint(0, 11, (2, 6))
    for _ in range(2):
        train_step(model, optimizer, criterion, src, tgt)
