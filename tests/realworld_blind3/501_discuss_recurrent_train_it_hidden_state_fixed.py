"""The same one-step recurrent model with the standard fix for a carried state: train_it detaches the carried hidden state before the step, so each backward only walks the current step's graph."""
# outcome: ok
# source: https://discuss.pytorch.org/t/runtimeerror-trying-to-backward-through-the-graph-a-second-time-but-the-buffers-have-already-been-freed-specify-retain-graph-true-when-calling-backward-the-first-time/6795
# repo: discuss.pytorch.org/6795
# category: iteration
# twin: 500_discuss_recurrent_train_it_hidden_state.py
# The post shows train_it (kept below) and says the model "execute[s] one step of a recurrent
# network, which updates its hidden state in the forward pass"; the module around it is written
# here to fit: an Elman cell whose hidden state lives on self.hidden.
import torch
import torch.nn as nn
from torch.autograd import Variable


class RecurrentModel(nn.Module):
    def __init__(self, n_in, n_hidden, n_out):
        super(RecurrentModel, self).__init__()
        self.i2h = nn.Linear(n_in, n_hidden)
        self.h2h = nn.Linear(n_hidden, n_hidden)
        self.h2o = nn.Linear(n_hidden, n_out)
        self.hidden = Variable(torch.zeros(1, n_hidden))
        self.loss = nn.MSELoss()
        self.optimizer = torch.optim.SGD(self.parameters(), lr=0.01)

    def forward(self, x):
        self.hidden = torch.tanh(self.i2h(x) + self.h2h(self.hidden))
        return self.h2o(self.hidden)

    def train_it(self, x, y):
        self.hidden = self.hidden.detach()
        prediction = self(x)
        loss = self.loss(prediction, y)
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()
        return loss.item()


if __name__ == "__main__":
    model = RecurrentModel(3, 8, 1)
    for step in range(3):
        x = Variable(torch.randn(1, 3))
        y = Variable(torch.randn(1, 1))
        print(step, model.train_it(x, y))
