"""The source-separation tutorial's gradient-descent chapter: to draw the loss landscape it sets the Linear layer's weight and bias by indexing, `line.layer.weight[0, 0] = m_hat`, in a plain loop, outside torch.no_grad()."""
# outcome: leaf-error
# source: https://github.com/source-separation/tutorial/issues/18
# repo: source-separation/tutorial
# category: leaf
# twin: 401_source_sep_tutorial_loss_landscape_param_index_fixed.py
# The notebook book/training/gradient_descent.ipynb as it was when the issue was filed, its cells
# in order; sizes shrunk (a 10 x 10 grid, 3 iterations), the plots drawn by a stand-in.
import torch
from torch import nn
import numpy as np
import tempfile
import copy
import random


# ---- stand-ins for nussl, matplotlib, gif and IPython.display (not installed here) ----
class _Anything:
    def __getattr__(self, name):
        return self

    def __call__(self, *args, **kwargs):
        return self

    def __iter__(self):
        return iter([self] * 6)


class nussl:
    class utils:
        @staticmethod
        def seed(random_seed):
            random.seed(random_seed)
            np.random.seed(random_seed)
            torch.manual_seed(random_seed)


plt = _Anything()


class gif:
    @staticmethod
    def frame(fn):
        def wrapper(*args, **kwargs):
            fn(*args, **kwargs)
            return None
        return wrapper

    @staticmethod
    def save(frames, path, duration=5.0):
        open(path, 'wb').close()


def display(*args, **kwargs):
    pass


def Image(data=None, format=None, width=None):
    return data


# ---- cell 1 ----
nussl.utils.seed(0)
to_numpy = lambda x: x.detach().numpy()
to_tensor = lambda x: torch.from_numpy(x).reshape(-1, 1).float()

def show_gif(frames, duration=5.0, width=600):
    with tempfile.NamedTemporaryFile(suffix='.gif') as f:
        gif.save(frames, f.name, duration=duration)
        with open(f.name,'rb') as f:
            im = Image(data=f.read(), format='png', width=width)
    return im

# ---- cell 2 ----
class Line(nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = nn.Linear(1, 1)

    def forward(self, x):
        y = self.layer(x)
        return y
    
line = Line()
x = torch.randn(100, 1)
y = line(x)

plt.title("Prediction of network at iteration. 0")
plt.scatter(to_numpy(x), to_numpy(y))
plt.show()

# ---- cell 3 ----
for n, p in line.named_parameters():
    print(n, p)

# ---- cell 4 ----
m = np.random.randn()
b = np.random.randn()
x = np.linspace(-10, 10, 100)
noise = np.random.normal(loc=0, scale=0.1, size=100)

y = m*x + b + noise

plt.title("Training data")
plt.scatter(x, y)
plt.show()

# ---- cell 5 ----
y_hat = line(to_tensor(x))

plt.title("Training data + network predictions")
plt.scatter(x, y, label='Training data')
plt.scatter(x, to_numpy(y_hat), label='Network predictions')
plt.xlabel('x')
plt.ylabel('y')
plt.show()

# ---- cell 6 ----
loss = (y_hat - to_tensor(y)).abs()
plt.title("Loss for each data point")
plt.scatter(x, to_numpy(loss))
plt.ylabel("Loss")
plt.xlabel("x")
plt.show()

# ---- cell 7 ----
print(loss.mean())

# ---- cell 8 ----
possible_m = np.linspace(-2, 2, 10)
possible_b = np.linspace(-2, 2, 10)
loss = np.empty((
    possible_m.shape[0], 
    possible_b.shape[0]
))

for i, m_hat in enumerate(possible_m):
    for j, b_hat in enumerate(possible_b):
        line.layer.weight[0, 0] = m_hat  # error: IPL002
        line.layer.bias[0] = b_hat  # error: IPL002
        y_hat = line(to_tensor(x))
        _loss = (y_hat - to_tensor(y)).abs().mean()
        loss[i, j] = _loss

plt.title('2D Visualization of Loss Landscape')
plt.pcolormesh(possible_m, possible_b, loss, shading='auto')
plt.colorbar()
plt.xlabel('Value of m')
plt.ylabel('Value of b')
plt.show()

# ---- cell 9 ----
idx = np.unravel_index(np.argmin(loss, axis=None), loss.shape)
m_hat = possible_m[idx[0]]
b_hat = possible_b[idx[1]]

print(f"Loss minimum of {loss.min():-2f} at \n\t m_hat={m_hat:0.2f}, b_hat={b_hat:-.2f}")
print(f"Actual m, b: \n\t m={m:.2f}, b={b:.2f}")

# ---- cell 10 ----
line.layer.weight[0, 0] = m_hat  # error: IPL002
line.layer.bias[0] = b_hat  # error: IPL002

y_hat = line(to_tensor(x))

plt.title("Training data + network predictions")
plt.scatter(x, y, label='Training data')
plt.scatter(x, to_numpy(y_hat), label='Network predictions')
plt.xlabel('x')
plt.ylabel('y')
plt.legend()
plt.show()

# ---- cells 11, 12 ----
plt.plot(possible_m, loss.mean(axis=1))
plt.show()
plt.plot(possible_b, loss.mean(axis=0))
plt.show()

# ---- cell 13 ----
line = Line()
with torch.no_grad():
    line.layer.weight[0, 0] = m_hat
    line.layer.bias[0] = b_hat

y_hat = line(to_tensor(x))
_loss = (y_hat - to_tensor(y)).abs().mean()
_loss.backward()

print(line.layer.weight.grad, line.layer.bias.grad)

# ---- cell 14 ----
possible_m = np.linspace(-1, 1, 10)
possible_b = np.linspace(-1, 1, 10)
grad_m = np.empty((
    possible_m.shape[0], 
    possible_b.shape[0]
))
grad_b = np.empty((
    possible_m.shape[0], 
    possible_b.shape[0]
))

for i, m_hat in enumerate(possible_m):
    for j, b_hat in enumerate(possible_b):
        line = Line()
        with torch.no_grad():
            line.layer.weight[0, 0] = m_hat
            line.layer.bias[0] = b_hat
        y_hat = line(to_tensor(x))
        _loss = (y_hat - to_tensor(y)).abs().mean()
        _loss.backward()
        
        grad_m[i, j] = line.layer.weight.grad.item()
        grad_b[i, j] = line.layer.bias.grad.item()

plt.plot(possible_m, grad_m.mean(axis=1))
plt.show()

# ---- cell 15 ----
N_ITER=3
LEARNING_RATE = 0.01
# initialize line
line = Line()

frames = []
@gif.frame
def plot(i):
    y_hat = line(to_tensor(x))
    plt.figure(dpi=300)
    plt.title(
        f"Training data + network predictions\n"
        f"Learning rate is {LEARNING_RATE}, Iteration {i}")

    plt.scatter(x, y, label='Training data')
    plt.scatter(x, to_numpy(y_hat), label='Network predictions')
    plt.legend()

for i in range(N_ITER):
    line.zero_grad()
    y_hat = line(to_tensor(x))
    _loss = (y_hat - to_tensor(y)).abs().mean()
    _loss.backward()
    
    for n, p in line.named_parameters():
        p.data += - LEARNING_RATE * p.grad
    
    frame = plot(i)
    frames.append(frame)

show_gif(frames)

# ---- cell 16 ----
N_ITER=3
LEARNING_RATES = [1.0, 0.5, 0.1, 0.01, 0.001, 0.0001]

line = Line()
lines = [copy.deepcopy(line) for _ in LEARNING_RATES]

for i in range(N_ITER):
    for j, line in enumerate(lines):
        line.zero_grad()
        y_hat = line(to_tensor(x))
        _loss = (y_hat - to_tensor(y)).abs().mean()
        _loss.backward()

        for n, p in line.named_parameters():
            p.data += - LEARNING_RATES[j] * p.grad

print([l.layer.weight.item() for l in lines])
