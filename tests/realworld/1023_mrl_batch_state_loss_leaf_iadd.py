"""MRL (DarkMatterAI): BatchState starts each batch with `self.loss = to_device(torch.tensor(0., requires_grad=True))`; on a CPU runtime `to_device` returns the same leaf, and LossCallback.compute_loss accumulates into it with `batch_state.loss += loss.mean()`; a few Environment steps with a small agent."""
# outcome: leaf-error
# source: https://github.com/DarkMatterAI/mrl/issues/14
# repo: DarkMatterAI/mrl
# category: leaf
# twin: 1024_mrl_batch_state_loss_leaf_iadd_fixed.py
import os
import time
from collections import defaultdict

import torch
import torch.nn as nn
from torch import optim

os.environ['use_cuda'] = 'cuda'  # as mrl.imports sets it


# ---- mrl/torch_core.py ----
def get_device():
    if torch.cuda.is_available() and os.environ['use_cuda']=='cuda':
        device = torch.cuda.current_device()
    else:
        device='cpu'

    device = torch.device(device)
    return device

def to_device(tensor, device=None):
    if device is None:
        device = get_device()
    else:
        device = torch.device(device)

    if hasattr(tensor, 'to'):
        output = tensor.to(device)
    else:
        output = [to_device(i, device) for i in tensor]

    return output


# ---- mrl/train/callback.py ----
class Callback():
    def __init__(self, name='base_callback', order=10):
        self.order=order
        self.name = name
        self.event_timelog = defaultdict(list)

    def __call__(self, event_name):

        start = time.time()
        event = getattr(self, event_name, None)
        if event is not None:
            output = event()
        else:
            output = None

        end = time.time() - start
        self.event_timelog[event_name].append(end)
        return output

    def __repr__(self):
        return self.name


class SettrDict(dict):
    def __init__(self):
        super().__init__()

    def __setitem__(self, key, item):
        super().__setitem__(key, item)
        super().__setattr__(key, item)

    def __setattr__(self, key, item):
        super().__setitem__(key, item)
        super().__setattr__(key, item)

    def update_from_dict(self, update_dict):
        for k,v in update_dict.items():
            self[k] = v


class BatchState(SettrDict):
    def __init__(self):
        super().__init__()

        self.samples = []
        self.sources = []
        self.rewards = to_device(torch.tensor(0.))
        self.loss = to_device(torch.tensor(0., requires_grad=True))
        self.latent_data = {}


# ---- mrl/train/agent.py (Agent without its dataset / supervised training) ----
class Agent(Callback):
    def __init__(self, model, loss_function, dataset, opt_kwargs={}, clip=1., name='agent'):
        super().__init__(name=name, order=2)
        self.model = model
        to_device(self.model)
        self.loss_function = loss_function
        self.dataset = dataset
        self.opt = self.get_opt(self.model.parameters(), **opt_kwargs)
        self.clip = clip
        self.training = True
        self.compute_outputs = True

    def get_opt(self, parameters, **optim_kwargs):
        return optim.Adam(parameters, **optim_kwargs)

    def zero_grad(self):
        self.opt.zero_grad()

    def before_step(self):
        if self.training:
            nn.utils.clip_grad_norm_(self.model.parameters(), self.clip)

    def step(self):
        if self.training:
            self.opt.step()


# ---- mrl/train/loss.py ----
class LossCallback(Callback):
    def __init__(self, loss_function, name, weight=1., track=True, order=20):
        super().__init__(name=name, order=order)
        self.loss_function = loss_function
        self.weight = weight
        self.track = track

    def compute_loss(self):
        loss = self.loss_function.from_batch_state(self.environment.batch_state)
        loss = loss * self.weight

        self.environment.batch_state.loss += loss.mean()  # error: IPL002
        self.environment.batch_state[self.name] = loss.detach().cpu().numpy()


# ---- mrl/train/environment.py (Environment cut to the events one batch runs) ----
class Environment():
    def __init__(self, agent=None, samplers=None, losses=None, cbs=None):
        if samplers is None:
            samplers = []
        if losses is None:
            losses = []
        if cbs is None:
            cbs = []
        self.agent = agent
        self.samplers = samplers
        self.losses = losses
        self.cbs = []
        self.verbose = False
        self.batch_state = BatchState()
        agent_cb = [self.agent] if self.agent is not None else []
        all_cbs = agent_cb + self.samplers
        all_cbs += self.losses + cbs
        self.register_cbs(all_cbs)
        self('setup')

    def __call__(self, event):
        if self.verbose:
            print(event)
        for cb in self.cbs:
            cb(event)

    def register_cb(self, cb):
        if isinstance(cb, type):
            cb = cb()
        if cb is not None:
            cb.environment = self
            setattr(self, cb.name, cb)
            self.cbs.append(cb)

    def register_cbs(self, cbs):
        for cb in cbs:
            self.register_cb(cb)
        self.sort_cbs()

    def sort_cbs(self):
        if self.cbs:
            self.cbs = sorted(self.cbs, key=lambda x: x.order)

    def sample_batch(self):
        self.batch_state = BatchState()
        self('before_batch')
        self('sample_batch')
        self('after_sample')

    def get_model_outputs(self):
        self('get_model_outputs')
        self('after_get_model_outputs')

    def compute_loss(self):
        self('compute_loss')
        loss = self.batch_state.loss
        self('zero_grad')
        loss.backward()
        self('before_step')
        self('step')

    def after_batch(self):
        self('after_batch')

    def step(self):
        self.sample_batch()
        self.get_model_outputs()
        self.compute_loss()
        self.after_batch()

    def fit(self, bs, sl, iters, report, cbs=None, verbose=False):
        self.bs, self.sl = bs, sl
        for i in range(iters):
            self.step()
            if i % report == 0:
                print(i, float(self.batch_state.loss))


# ---- a random sampler and a regression loss on the agent's outputs ----
class RandomSampler(Callback):
    def __init__(self, name='random_sampler', order=10):
        super().__init__(name=name, order=order)

    def sample_batch(self):
        env = self.environment
        env.batch_state.x = torch.randn(env.bs, 8)
        env.batch_state.rewards = torch.randn(env.bs)


class ValueLoss():
    def __init__(self, model):
        self.model = model

    def from_batch_state(self, batch_state):
        preds = self.model(batch_state.x).squeeze(-1)
        return (preds - batch_state.rewards).pow(2)


if __name__ == "__main__":
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))
    agent = Agent(model, nn.MSELoss(), None, opt_kwargs={'lr': 1e-3})
    loss_cb = LossCallback(ValueLoss(agent.model), 'value_loss', track=False)
    env = Environment(agent, samplers=[RandomSampler()], losses=[loss_cb])
    env.fit(bs=4, sl=10, iters=3, report=1)
