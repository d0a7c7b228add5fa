"""fastbook chapter 4 (MNIST basics): nudging one weight to see the accuracy move, `weights[0] *= 1.0001`, on a tensor made by `init_params(...).requires_grad_()`."""
# outcome: leaf-error
# source: https://github.com/fastai/fastbook/pull/471
# repo: fastai/fastbook
# category: leaf
# twin: 307_fastbook_mnist_basics_weight_nudge_fixed.py
import torch
import torch.nn as nn
from torch import tensor
from torch.utils.data import DataLoader


# stand-ins for fastai's `first` and `SGD` (not installed here)
def first(x):
    return next(iter(x))


SGD = torch.optim.SGD

torch.manual_seed(42)

# random 28x28 images instead of the MNIST_SAMPLE threes and sevens
stacked_threes = torch.rand(60, 28, 28)
stacked_sevens = torch.rand(60, 28, 28) * 0.5
threes, sevens = list(range(60)), list(range(60))
valid_3_tens = torch.rand(20, 28, 28)
valid_7_tens = torch.rand(20, 28, 28) * 0.5

# ## The MNIST Loss Function

train_x = torch.cat([stacked_threes, stacked_sevens]).view(-1, 28*28)
train_y = tensor([1]*len(threes) + [0]*len(sevens)).unsqueeze(1)
print(train_x.shape, train_y.shape)

dset = list(zip(train_x,train_y))
x,y = dset[0]
print(x.shape, y)

valid_x = torch.cat([valid_3_tens, valid_7_tens]).view(-1, 28*28)
valid_y = tensor([1]*len(valid_3_tens) + [0]*len(valid_7_tens)).unsqueeze(1)
valid_dset = list(zip(valid_x,valid_y))

def init_params(size, std=1.0): return (torch.randn(size)*std).requires_grad_()

weights = init_params((28*28,1))
bias = init_params(1)

print((train_x[0]*weights.T).sum() + bias)

def linear1(xb): return xb@weights + bias
preds = linear1(train_x)
print(preds)

corrects = (preds>0.0).float() == train_y
print(corrects.float().mean().item())

weights[0] *= 1.0001  # error: IPL002

preds = linear1(train_x)
print(((preds>0.0).float() == train_y).float().mean().item())

trgts  = tensor([1,0,1])
prds   = tensor([0.9, 0.4, 0.2])

def mnist_loss(predictions, targets):
    return torch.where(targets==1, 1-predictions, predictions).mean()

print(torch.where(trgts==1, 1-prds, prds))
print(mnist_loss(prds,trgts))
print(mnist_loss(tensor([0.9, 0.4, 0.8]),trgts))

# ### Sigmoid

def sigmoid(x): return 1/(1+torch.exp(-x))

def mnist_loss(predictions, targets):
    predictions = predictions.sigmoid()
    return torch.where(targets==1, 1-predictions, predictions).mean()

# ## Putting It All Together

weights = init_params((28*28,1))
bias = init_params(1)

dl = DataLoader(dset, batch_size=32)
xb,yb = first(dl)
print(xb.shape, yb.shape)

valid_dl = DataLoader(valid_dset, batch_size=32)

batch = train_x[:4]
preds = linear1(batch)
loss = mnist_loss(preds, train_y[:4])
loss.backward()
print(weights.grad.shape, weights.grad.mean(), bias.grad)

def calc_grad(xb, yb, model):
    preds = model(xb)
    loss = mnist_loss(preds, yb)
    loss.backward()

calc_grad(batch, train_y[:4], linear1)
print(weights.grad.mean(), bias.grad)

weights.grad.zero_()
bias.grad.zero_();

def train_epoch(model, lr, params):
    for xb,yb in dl:
        calc_grad(xb, yb, model)
        for p in params:
            p.data -= p.grad*lr
            p.grad.zero_()

def batch_accuracy(xb, yb):
    preds = xb.sigmoid()
    correct = (preds>0.5) == yb
    return correct.float().mean()

print(batch_accuracy(linear1(batch), train_y[:4]))

def validate_epoch(model):
    accs = [batch_accuracy(model(xb), yb) for xb,yb in valid_dl]
    return round(torch.stack(accs).mean().item(), 4)

print(validate_epoch(linear1))

lr = 1.
params = weights,bias
train_epoch(linear1, lr, params)
print(validate_epoch(linear1))

for i in range(3):
    train_epoch(linear1, lr, params)
    print(validate_epoch(linear1), end=' ')

# ### Creating an Optimizer

linear_model = nn.Linear(28*28,1)

class BasicOptim:
    def __init__(self,params,lr): self.params,self.lr = list(params),lr

    def step(self, *args, **kwargs):
        for p in self.params: p.data -= p.grad.data * self.lr

    def zero_grad(self, *args, **kwargs):
        for p in self.params: p.grad = None

opt = BasicOptim(linear_model.parameters(), lr)

def train_epoch(model):
    for xb,yb in dl:
        calc_grad(xb, yb, model)
        opt.step()
        opt.zero_grad()

def train_model(model, epochs):
    for i in range(epochs):
        train_epoch(model)
        print(validate_epoch(model), end=' ')

train_model(linear_model, 3)

linear_model = nn.Linear(28*28,1)
opt = SGD(linear_model.parameters(), lr)
train_model(linear_model, 3)
print()
