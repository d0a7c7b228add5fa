"""The synthetic labels Y are computed once from true_W and true_b that require grad, so every batch's loss.backward() runs back through the same Y graph, which the first backward freed."""
# outcome: retention-error
# source: https://github.com/zhangyu2234/Deep-learning-by-hand/blob/5fc12b64265b9057f2d958de23e985f70aa4b163/Chapter%201-Let%E2%80%99s%20start%20with%20the%20simplest%20full%20connection/1.3%20Problems%20I%20encountered.ipynb
# repo: zhangyu2234/Deep-learning-by-hand
# category: retention
# twin: 105_by_hand_fc_labels_with_graph_fixed.py
from random import shuffle

import torch


# ---- utils/Common.py ----
class DataLoader:
    def __init__(self, data, labels, batch_size, shuffle=False):
        self.data = data
        self.batch_size = batch_size
        self.labels = labels
        self.indexes = list(range(len(self.data)))
        self.shuffle = shuffle
    def __iter__(self):
        self.start = 0
        if self.shuffle is True:
            shuffle(self.indexes)
        return self
    def __next__(self):
        start = self.start
        self.end = min(start+self.batch_size, len(self.data))
        if start >= self.end:
            raise StopIteration
        self.start += self.batch_size
        index = self.indexes[start:self.end]
        return self.data[index], self.labels[index]  # error: IPL004


def loss(y_hat, y):
    return torch.mean((y_hat.reshape(y.shape) - y)**2 / 2)


def sgd(params, lr, batch_size):
    with torch.no_grad():
        if isinstance(params, list):
            for i in range(len(params)):
                params[i] -= lr * params[i].grad / batch_size
                params[i].grad.zero_()
        else:
            params -= lr * params.grad / batch_size
            params.grad.zero_()

def relu(x):
    a = torch.zeros(x.shape)
    return torch.max(a, x)


# ---- 1.3 Problems I encountered.ipynb ----
# Randomly generate our training samples and train labels
num_samples = 100
num_features = 2
num_hiddens = 2
# train samples
X = torch.randn((num_samples, num_features), dtype=torch.float32)
true_W = torch.randn((num_hiddens, 1), requires_grad=True, dtype=torch.float32)
true_b = torch.randn(1, requires_grad=True, dtype=torch.float32)
Y = torch.mm(X, true_W) + true_b

print(X[:5], Y[:5], true_W, true_b)


# fc
def fc(x, w, b):
    return relu(torch.mm(x, w) + b)


# Randomly generate W and b and attach gradients
W = torch.normal(0, 0.01, size=(num_hiddens, 1), requires_grad=True)
b = torch.zeros(1, requires_grad=True)

batch_size = 20
lr = 0.01
num_epochs = 2
dataloader = DataLoader(X, Y, batch_size, shuffle=True)

for epoch in range(num_epochs):
    for x, y in dataloader:
        l = loss(fc(x, W, b), y)
        l.backward()
        sgd([W, b], lr, batch_size)
    if (epoch+1) % 5 == 0:
        print('Epoch:{}, Loss:{:.4f}'.format(epoch+1, l))
