"""The same loop with the post's conclusion applied: (h0, c0) still carry the state into the next batch, but detached from the batch that produced them."""
# outcome: ok
# source: https://blog.youkuaiyun.com/windhawk_fly/article/details/143405685
# repo: blog.youkuaiyun.com/143405685
# category: iteration
# twin: 114_csdn_lstm_h0_c0_across_batches.py
# The post shows the training loop (kept verbatim below) and the error on a [128, 6] tensor,
# the weight_ih of an LSTM with 6 inputs and 32 hidden units; the model class is not shown and
# is written here to fit: an nn.LSTM over 6 features with a linear head back to 6 features.
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

EPOCH = 2
num_layers = 1
batch_size = 4
hidden_dim = 32
embedding_dim = 6


class LSTM(nn.Module):
    def __init__(self, embedding_dim, hidden_dim, num_layers):
        super(LSTM, self).__init__()
        self.lstm = nn.LSTM(embedding_dim, hidden_dim, num_layers, batch_first=True)
        self.fc = nn.Linear(hidden_dim, embedding_dim)

    def forward(self, x, h0, c0):
        out, (h, c) = self.lstm(x, (h0, c0))
        out = self.fc(out)
        return out, (h, c)


series = torch.randn(8 * batch_size, 1, embedding_dim)
targets = torch.randn(8 * batch_size, embedding_dim)
data_loader = DataLoader(TensorDataset(series, targets), batch_size=batch_size, drop_last=True)
batch_count = len(data_loader)

lstm = LSTM(embedding_dim, hidden_dim, num_layers)
loss_fn = nn.MSELoss()
optimizer = torch.optim.Adam(lstm.parameters(), lr=1e-3)

for epoch in range(EPOCH):
    batch_num = 0
    h0 = torch.randn((num_layers, batch_size, hidden_dim), requires_grad=False)
    c0 = torch.randn((num_layers, batch_size, hidden_dim), requires_grad=False)
    for batch in data_loader:
        optimizer.zero_grad()
        output, (h0, c0) = lstm(batch[0], h0, c0)
        h0, c0 = h0.detach(), c0.detach()
        loss = loss_fn(output.reshape(-1,embedding_dim), batch[1])
        loss.backward(retain_graph=True)
        optimizer.step()
        batch_num += 1
        if (batch_num) % min(10, batch_count // 2) == 0:
            print(f'epoch {epoch} : batch {batch_num} : {loss.item():.4f}')
