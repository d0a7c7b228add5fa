"""torchbearer's Trial with no criterion makes the loss `torch.zeros(1, ..., requires_grad=True)`, and the add_to_loss callback adds to it in place, `state[torchbearer.LOSS] += func(state)`: with add_to_loss as the only loss, the in-place add lands on that leaf."""
# outcome: leaf-error
# source: https://github.com/pytorchbearer/torchbearer/issues/431
# repo: pytorchbearer/torchbearer
# category: leaf
# twin: 410_torchbearer_none_criterion_add_to_loss_fixed.py
# torchbearer 0.2.3 (October 2018), the parts a training run goes through: the state keys, the
# Callback / CallbackList classes, the add_to_loss decorator (callbacks/decorators.py), and
# Trial.__init__ / with_generators / run / _fit_pass (trial.py), without metrics, printers and
# validation; then a run as the issue describes it: criterion None and one add_to_loss callback.
import functools
import warnings

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.optim import Optimizer
from torch.utils.data import DataLoader, TensorDataset


# ---- torchbearer/state.py (the keys used here) ----
class torchbearer:
    MODEL = 'model'
    CRITERION = 'criterion'
    OPTIMIZER = 'optimizer'
    CALLBACK_LIST = 'callback_list'
    DEVICE = 'device'
    DATA_TYPE = 'dtype'
    SELF = 'self'
    HISTORY = 'history'
    BACKWARD_ARGS = 'backward_args'
    TRAIN_GENERATOR = 'train_generator'
    TRAIN_STEPS = 'train_steps'
    TRAIN_DATA = 'train_data'
    MAX_EPOCHS = 'max_epochs'
    STOP_TRAINING = 'stop_training'
    EPOCH = 'epoch'
    METRICS = 'metrics'
    ITERATOR = 'iterator'
    GENERATOR = 'generator'
    STEPS = 'steps'
    BATCH = 't'
    SAMPLER = 'sampler'
    DATA = 'data'
    X = 'x'
    Y_TRUE = 'y_true'
    Y_PRED = 'y_pred'
    LOSS = 'loss'


State = dict


# ---- torchbearer/callbacks/callbacks.py ----
class Callback(object):
    def on_start(self, state): pass
    def on_start_epoch(self, state): pass
    def on_start_training(self, state): pass
    def on_sample(self, state): pass
    def on_forward(self, state): pass
    def on_criterion(self, state): pass
    def on_backward(self, state): pass
    def on_step_training(self, state): pass
    def on_end_training(self, state): pass
    def on_end_epoch(self, state): pass
    def on_checkpoint(self, state): pass
    def on_end(self, state): pass
    def on_criterion_validation(self, state): pass


class CallbackList(object):
    def __init__(self, callback_list):
        super(CallbackList, self).__init__()
        self.callback_list = []
        self.append(callback_list)

    def append(self, callback_list):
        for callback in callback_list:
            if isinstance(callback, CallbackList):
                self.callback_list = self.callback_list + callback.callback_list
            else:
                self.callback_list.append(callback)

    def _for_list(self, function):
        for callback in self.callback_list:
            function(callback)

    def on_start(self, state): self._for_list(lambda callback: callback.on_start(state))
    def on_start_epoch(self, state): self._for_list(lambda callback: callback.on_start_epoch(state))
    def on_start_training(self, state): self._for_list(lambda callback: callback.on_start_training(state))
    def on_sample(self, state): self._for_list(lambda callback: callback.on_sample(state))
    def on_forward(self, state): self._for_list(lambda callback: callback.on_forward(state))
    def on_criterion(self, state): self._for_list(lambda callback: callback.on_criterion(state))
    def on_backward(self, state): self._for_list(lambda callback: callback.on_backward(state))
    def on_step_training(self, state): self._for_list(lambda callback: callback.on_step_training(state))
    def on_end_training(self, state): self._for_list(lambda callback: callback.on_end_training(state))
    def on_end_epoch(self, state): self._for_list(lambda callback: callback.on_end_epoch(state))
    def on_checkpoint(self, state): self._for_list(lambda callback: callback.on_checkpoint(state))
    def on_end(self, state): self._for_list(lambda callback: callback.on_end(state))


# ---- torchbearer/callbacks/decorators.py ----
class LambdaCallback(Callback):
    def __init__(self, func):
        self.func = func

    def on_lambda(self, state):
        return self.func(state)


def bind_to(target):
    def decorator(func):
        if isinstance(func, LambdaCallback):
            callback = func
        else:
            callback = LambdaCallback(func)
        setattr(callback, target.__name__, lambda state: callback.on_lambda(state))
        return callback
    return decorator


def on_criterion(func):
    return bind_to(Callback.on_criterion)(func)


def on_criterion_validation(func):
    return bind_to(Callback.on_criterion_validation)(func)


def add_to_loss(func):
    """ The :func:`add_to_loss` decorator is used to initialise a :class:`.Callback` with the value returned from func
    being added to the loss
    """
    @on_criterion
    @on_criterion_validation
    def add_to_loss_callback(state):
        state[torchbearer.LOSS] += func(state)  # error: IPL002

    return add_to_loss_callback


# ---- torchbearer/trial.py ----
class MockOptimizer(Optimizer):
    def __init__(self):
        super(MockOptimizer, self).__init__([torch.zeros(1)], {})

    def step(self, closure=None):
        pass  # Do Nothing

    def zero_grad(self):
        pass  # Do Nothing


def deep_to(batch, device, dtype):
    is_tuple = isinstance(batch, tuple)

    if isinstance(batch, list) or isinstance(batch, tuple):
        batch = list(batch)
        for i in range(len(batch)):
            batch[i] = deep_to(batch[i], device, dtype)
        batch = tuple(batch) if is_tuple else batch
    else:
        if batch.dtype.is_floating_point:
            batch = batch.to(device, dtype)
        else:
            batch = batch.to(device)

    return batch


def load_batch_standard(state):
    state[torchbearer.X], state[torchbearer.Y_TRUE] = deep_to(next(state[torchbearer.ITERATOR]),
                                                              state[torchbearer.DEVICE],
                                                              state[torchbearer.DATA_TYPE])


class Sampler:
    def __init__(self, batch_loader):
        super().__init__()
        self.batch_loader = batch_loader

    def sample(self, state):
        self.batch_loader(state)


def inject_sampler(data_key, predict=False):
    def decorator(func):
        @functools.wraps(func)
        def wrapper(self, *args, **kwargs):
            generator, steps = self.state[torchbearer.TRAIN_GENERATOR], self.state[torchbearer.TRAIN_STEPS]
            self.state[torchbearer.DATA] = data_key
            self.state[torchbearer.SAMPLER] = Sampler(load_batch_standard)
            self.state[torchbearer.GENERATOR] = generator
            self.state[torchbearer.STEPS] = steps
            return func(self, *args, **kwargs)
        return wrapper
    return decorator


def fluent(func):
    @functools.wraps(func)
    def wrapper(self, *args, **kwargs):
        func(self, *args, **kwargs)
        return self
    return wrapper


class Trial(object):
    def __init__(self, model, optimizer=None, criterion=None, metrics=[], callbacks=[], pass_state=False, verbose=2):
        if criterion is None:
            def criterion(_, __):
                return torch.zeros(1, device=self.state[torchbearer.DEVICE], dtype=self.state[torchbearer.DATA_TYPE], requires_grad=True)

        self.pass_state = pass_state
        self.verbose = verbose

        self.state = State()
        self.state.update({
            torchbearer.MODEL: model,
            torchbearer.CRITERION: criterion,
            torchbearer.OPTIMIZER: optimizer if optimizer is not None else MockOptimizer(),
            torchbearer.CALLBACK_LIST: CallbackList(callbacks),
            torchbearer.DEVICE: 'cpu',
            torchbearer.DATA_TYPE: torch.float32,
            torchbearer.SELF: self,
            torchbearer.HISTORY: [],
            torchbearer.BACKWARD_ARGS: {},
            torchbearer.TRAIN_GENERATOR: None,
            torchbearer.TRAIN_STEPS: None,
            torchbearer.TRAIN_DATA: None,
        })

    @fluent
    def with_train_generator(self, generator, steps=None):
        self.state[torchbearer.TRAIN_GENERATOR] = generator
        steps = len(generator) if steps is None else steps
        self.state[torchbearer.TRAIN_STEPS] = steps

    @fluent
    def with_generators(self, train_generator=None, val_generator=None, test_generator=None, train_steps=None, val_steps=None, test_steps=None):
        if train_generator is not None:
            self.with_train_generator(train_generator, train_steps)

    def run(self, epochs=1, verbose=-1):
        state = State()
        state.update({
            torchbearer.MAX_EPOCHS: epochs,
            torchbearer.STOP_TRAINING: False
        })

        state.update(self.state)

        if state[torchbearer.MODEL] is None or not callable(state[torchbearer.MODEL]):
            warnings.warn('The Model is None or not callable which may cause issues if not deliberate')
            state[torchbearer.MODEL] = lambda *args, **kwargs: None

        if state[torchbearer.TRAIN_GENERATOR] is not None \
                or state[torchbearer.TRAIN_STEPS] is not None:

            state[torchbearer.CALLBACK_LIST].on_start(state)

            for state[torchbearer.EPOCH] in range(len(state[torchbearer.HISTORY]), state[torchbearer.MAX_EPOCHS]):
                state[torchbearer.CALLBACK_LIST].on_start_epoch(state)

                final_metrics = self._fit_pass(state)[torchbearer.METRICS]

                if state[torchbearer.STOP_TRAINING]:
                    break

                state[torchbearer.METRICS] = final_metrics
                state[torchbearer.CALLBACK_LIST].on_end_epoch(state)
                steps_summary = (state[torchbearer.TRAIN_STEPS], None)
                self.state[torchbearer.HISTORY].append((steps_summary, state[torchbearer.METRICS]))
                state[torchbearer.CALLBACK_LIST].on_checkpoint(state)

            state[torchbearer.CALLBACK_LIST].on_end(state)

        return self.state[torchbearer.HISTORY]

    @inject_sampler(torchbearer.TRAIN_DATA)
    def _fit_pass(self, state):
        state.update(self.state)

        self.train()

        state[torchbearer.ITERATOR] = iter(state[torchbearer.GENERATOR]) if state[torchbearer.GENERATOR] is not None else None

        state[torchbearer.METRICS] = {}

        state[torchbearer.CALLBACK_LIST].on_start_training(state)

        for state[torchbearer.BATCH] in range(state[torchbearer.STEPS]):
            state[torchbearer.SAMPLER].sample(state)
            state[torchbearer.CALLBACK_LIST].on_sample(state)

            def closure():
                # Zero grads
                state[torchbearer.OPTIMIZER].zero_grad()

                # Forward Pass
                if self.pass_state:
                    state[torchbearer.Y_PRED] = state[torchbearer.MODEL](state[torchbearer.X], state=state)
                else:
                    state[torchbearer.Y_PRED] = state[torchbearer.MODEL](state[torchbearer.X])

                state[torchbearer.CALLBACK_LIST].on_forward(state)

                # Loss Calculation
                state[torchbearer.LOSS] = state[torchbearer.CRITERION](state[torchbearer.Y_PRED], state[torchbearer.Y_TRUE])

                state[torchbearer.CALLBACK_LIST].on_criterion(state)

                # Backwards pass
                state[torchbearer.LOSS].backward(**state[torchbearer.BACKWARD_ARGS])
                state[torchbearer.CALLBACK_LIST].on_backward(state)

            # Update parameters
            state[torchbearer.OPTIMIZER].step(closure)
            state[torchbearer.METRICS] = {'loss': state[torchbearer.LOSS].item()}
            state[torchbearer.CALLBACK_LIST].on_step_training(state)

            if state[torchbearer.STOP_TRAINING]:
                break

        state[torchbearer.CALLBACK_LIST].on_end_training(state)
        return state

    def train(self):
        self.state[torchbearer.MODEL].train()


# ---- the run: no criterion, the loss comes from an add_to_loss callback ----
model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)


@add_to_loss
def mse_loss(state):
    return F.mse_loss(state[torchbearer.Y_PRED], state[torchbearer.Y_TRUE])


x = torch.randn(32, 4)
y = torch.randn(32, 1)
loader = DataLoader(TensorDataset(x, y), batch_size=8)

trial = Trial(model, optimizer, None, callbacks=[mse_loss]).with_generators(train_generator=loader)
history = trial.run(epochs=2)
print(history)
