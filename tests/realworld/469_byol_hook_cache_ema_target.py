"""byol-pytorch: the hidden layer's output captured by a forward hook into `self.hidden` (a dict on the wrapper, cleared each call), projector and target encoder built once and cached on self by `@singleton`, `nn.ReLU(inplace=True)` after BatchNorm in the MLPs, and the EMA target written with `ma_params.data = ...` after each optimizer step, as the README's training loop runs it."""
# outcome: ok
# source: https://github.com/lucidrains/byol-pytorch/blob/master/byol_pytorch/byol_pytorch.py
# repo: lucidrains/byol-pytorch
# category: trainer
import copy
import random
from functools import wraps

import torch
from torch import nn
from torch.nn import Module
import torch.nn.functional as F
import torch.distributed as dist

# ---- stand-ins for the two packages the file imports: torchvision's transforms (identity
# modules; the case passes its own augment_fn) and einops.rearrange for the two patterns SEM uses
class T:
    ColorJitter = RandomGrayscale = RandomHorizontalFlip = GaussianBlur = RandomResizedCrop = Normalize = \
        staticmethod(lambda *args, **kwargs: nn.Identity())


def rearrange(t, pattern, v=None):
    if pattern == '... (l v) -> ... l v':
        return t.reshape(*t.shape[:-1], t.shape[-1] // v, v)
    if pattern == '... l v -> ... (l v)':
        return t.reshape(*t.shape[:-2], t.shape[-2] * t.shape[-1])
    raise NotImplementedError(pattern)


# ---- byol_pytorch/byol_pytorch.py ----

# helper functions

def exists(v):
    return v is not None

def default(val, def_val):
    return def_val if val is None else val

def divisible_by(num, den):
    return (num % den) == 0

def l2norm(t):
    return F.normalize(t, dim = -1, p = 2)

def flatten(t):
    return t.reshape(t.shape[0], -1)

def singleton(cache_key):
    def inner_fn(fn):
        @wraps(fn)
        def wrapper(self, *args, **kwargs):
            instance = getattr(self, cache_key)
            if instance is not None:
                return instance

            instance = fn(self, *args, **kwargs)
            setattr(self, cache_key, instance)
            return instance
        return wrapper
    return inner_fn

def get_module_device(module):
    return next(module.parameters()).device

def set_requires_grad(model, val):
    for p in model.parameters():
        p.requires_grad = val

def MaybeSyncBatchnorm(is_distributed = None):
    is_distributed = default(is_distributed, dist.is_initialized() and dist.get_world_size() > 1)
    return nn.SyncBatchNorm if is_distributed else nn.BatchNorm1d

# loss fn

def cosine_loss_fn(x, y):
    x = l2norm(x)
    y = l2norm(y)
    return 2 - 2 * (x * y).sum(dim = -1)

def kl_loss_fn(x, y, eps = 1e-5):
    x, y = tuple(t.clamp_min(eps) for t in (x, y))
    return F.kl_div(x.log(), y, reduction = 'batchmean')

# simplicial embeddings
# Lavoie et al - https://arxiv.org/abs/2204.00616

class SEM(Module):
    def __init__(
        self,
        dim,
        temperature = 0.1,
        dim_simplex = 8
    ):
        super().__init__()
        assert divisible_by(dim, dim_simplex), f'{dim} must be divisible by {dim_simplex}'

        self.dim = dim
        self.dim_simplex = dim_simplex
        self.temperature = temperature

    def forward(
        self,
        t
    ):
        t = rearrange(t, '... (l v) -> ... l v', v = self.dim_simplex)
        t = (t / self.temperature).softmax(dim = -1)
        return rearrange(t, '... l v -> ... (l v)')

# augmentation utils

class RandomApply(Module):
    def __init__(self, fn, p):
        super().__init__()
        self.fn = fn
        self.p = p
    def forward(self, x):
        if random.random() > self.p:
            return x
        return self.fn(x)

# exponential moving average

class EMA():
    def __init__(self, beta):
        super().__init__()
        self.beta = beta

    def update_average(self, old, new):
        if old is None:
            return new
        return old * self.beta + (1 - self.beta) * new

def update_moving_average(ema_updater, ma_model, current_model):
    for current_params, ma_params in zip(current_model.parameters(), ma_model.parameters()):
        old_weight, up_weight = ma_params.data, current_params.data
        ma_params.data = ema_updater.update_average(old_weight, up_weight)

# MLP class for projector and predictor

def MLP(dim, projection_size, hidden_size = 4096, sync_batchnorm = None):
    return nn.Sequential(
        nn.Linear(dim, hidden_size),
        MaybeSyncBatchnorm(sync_batchnorm)(hidden_size),
        nn.ReLU(inplace = True),
        nn.Linear(hidden_size, projection_size)
    )

def SimSiamMLP(dim, projection_size, hidden_size = 4096, sync_batchnorm = None):
    return nn.Sequential(
        nn.Linear(dim, hidden_size, bias = False),
        MaybeSyncBatchnorm(sync_batchnorm)(hidden_size),
        nn.ReLU(inplace = True),
        nn.Linear(hidden_size, hidden_size, bias = False),
        MaybeSyncBatchnorm(sync_batchnorm)(hidden_size),
        nn.ReLU(inplace = True),
        nn.Linear(hidden_size, projection_size, bias = False),
        MaybeSyncBatchnorm(sync_batchnorm)(projection_size, affine = False)
    )

# a wrapper class for the base neural network
# will manage the interception of the hidden layer output
# and pipe it into the projecter and predictor nets

class NetWrapper(Module):
    def __init__(
        self,
        net,
        projection_size,
        projection_hidden_size,
        layer = -2,
        use_simsiam_mlp = False,
        sync_batchnorm = None,
        use_simplicial_embeddings = False,
        sem_num_simplices = 32,
        sem_simplex_dim = 8,
        sem_temperature = 0.1
    ):
        super().__init__()
        self.net = net
        self.layer = layer

        self.projector = None
        self.projection_size = projection_size
        self.projection_hidden_size = projection_hidden_size

        self.sync_batchnorm = sync_batchnorm

        # sim siam

        self.use_simsiam_mlp = use_simsiam_mlp

        # simplicial embeddings

        self.use_simplicial_embeddings = use_simplicial_embeddings
        self.sem_num_simplices = sem_num_simplices
        self.sem_simplex_dim = sem_simplex_dim
        self.sem_temperature = sem_temperature

        # hooks

        self.hidden = {}
        self.hook_registered = False

    def _find_layer(self):
        if type(self.layer) == str:
            modules = dict([*self.net.named_modules()])
            return modules.get(self.layer, None)
        elif type(self.layer) == int:
            children = [*self.net.children()]
            return children[self.layer]
        return None

    def _hook(self, _, input, output):
        device = input[0].device
        self.hidden[device] = flatten(output)

    def _register_hook(self):
        layer = self._find_layer()
        assert layer is not None, f'hidden layer ({self.layer}) not found'
        handle = layer.register_forward_hook(self._hook)
        self.hook_registered = True

    @singleton('projector')
    def _get_projector(self, hidden):
        _, dim = hidden.shape
        create_mlp_fn = MLP if not self.use_simsiam_mlp else SimSiamMLP

        projector_input_dim = dim

        if self.use_simplicial_embeddings:
            sem_dim = self.sem_num_simplices * self.sem_simplex_dim
            projector_input_dim = sem_dim

        projector = create_mlp_fn(projector_input_dim, self.projection_size, self.projection_hidden_size, sync_batchnorm = self.sync_batchnorm)

        if self.use_simplicial_embeddings:
            Norm = MaybeSyncBatchnorm(self.sync_batchnorm)

            embedder = nn.Sequential(
                nn.Linear(dim, sem_dim),
                Norm(sem_dim)
            )

            sem = SEM(sem_dim, temperature = self.sem_temperature, dim_simplex = self.sem_simplex_dim)

            projector = nn.Sequential(embedder, sem, projector)

        return projector.to(hidden)

    def get_representation(self, x):
        if self.layer == -1:
            return self.net(x)

        if not self.hook_registered:
            self._register_hook()

        self.hidden.clear()
        _ = self.net(x)
        hidden = self.hidden[x.device]
        self.hidden.clear()

        assert hidden is not None, f'hidden layer {self.layer} never emitted an output'
        return hidden

    def forward(self, x, return_projection = True):
        representation = self.get_representation(x)

        if not return_projection:
            return representation

        projector = self._get_projector(representation)
        projection = projector(representation)
        return projection, representation

# main class

class BYOL(Module):
    def __init__(
        self,
        net,
        image_size,
        hidden_layer = -2,
        projection_size = 256,
        projection_hidden_size = 4096,
        augment_fn = None,
        augment_fn2 = None,
        moving_average_decay = 0.99,
        use_momentum = True,
        sync_batchnorm = None,
        use_simplicial_embeddings = True,
        sem_num_simplices = 32,
        sem_simplex_dim = 8,
        sem_temperature = 0.1
    ):
        super().__init__()
        self.net = net

        # default SimCLR augmentation

        DEFAULT_AUG = torch.nn.Sequential(
            RandomApply(
                T.ColorJitter(0.8, 0.8, 0.8, 0.2),
                p = 0.3
            ),
            T.RandomGrayscale(p = 0.2),
            T.RandomHorizontalFlip(),
            RandomApply(
                T.GaussianBlur((3, 3), (1.0, 2.0)),
                p = 0.2
            ),
            T.RandomResizedCrop((image_size, image_size)),
            T.Normalize(
                mean = torch.tensor([0.485, 0.456, 0.406]),
                std = torch.tensor([0.229, 0.224, 0.225])),
        )

        self.augment1 = default(augment_fn, DEFAULT_AUG)
        self.augment2 = default(augment_fn2, self.augment1)

        self.online_encoder = NetWrapper(
            net,
            projection_size,
            projection_hidden_size,
            layer = hidden_layer,
            use_simsiam_mlp = not use_momentum,
            sync_batchnorm = sync_batchnorm,
            use_simplicial_embeddings = use_simplicial_embeddings,
            sem_num_simplices = sem_num_simplices,
            sem_simplex_dim = sem_simplex_dim,
            sem_temperature = sem_temperature
        )

        self.use_momentum = use_momentum
        self.target_encoder = None
        self.target_ema_updater = EMA(moving_average_decay)

        self.online_predictor = MLP(projection_size, projection_size, projection_hidden_size)

        # get device of network and make wrapper same device
        device = get_module_device(net)
        self.to(device)

        # send a mock image tensor to instantiate singleton parameters
        self.forward(torch.randn(2, 3, image_size, image_size, device = device))

    @singleton('target_encoder')
    def _get_target_encoder(self):
        target_encoder = copy.deepcopy(self.online_encoder)
        set_requires_grad(target_encoder, False)
        return target_encoder

    def reset_moving_average(self):
        del self.target_encoder
        self.target_encoder = None

    def update_moving_average(self):
        assert self.use_momentum, 'you do not need to update the moving average, since you have turned off momentum for the target encoder'
        assert self.target_encoder is not None, 'target encoder has not been created yet'
        update_moving_average(self.target_ema_updater, self.target_encoder, self.online_encoder)

    def forward(
        self,
        x,
        return_embedding = False,
        return_projection = True
    ):
        assert not (self.training and x.shape[0] == 1), 'you must have greater than 1 sample when training, due to the batchnorm in the projection layer'

        if return_embedding:
            return self.online_encoder(x, return_projection = return_projection)

        image_one, image_two = self.augment1(x), self.augment2(x)

        images = torch.cat((image_one, image_two), dim = 0)

        online_projections, _ = self.online_encoder(images)
        online_predictions = self.online_predictor(online_projections)

        online_pred_one, online_pred_two = online_predictions.chunk(2, dim = 0)

        with torch.no_grad():
            target_encoder = self._get_target_encoder() if self.use_momentum else self.online_encoder

            target_projections, _ = target_encoder(images)
            target_projections = target_projections.detach()

            target_proj_one, target_proj_two = target_projections.chunk(2, dim = 0)

        loss_fn = cosine_loss_fn

        loss_one = loss_fn(online_pred_one, target_proj_two.detach())
        loss_two = loss_fn(online_pred_two, target_proj_one.detach())

        loss = loss_one + loss_two
        return loss.mean()


# ---- README usage (a small convnet with an `avgpool` layer instead of torchvision's resnet50) ----
class SmallNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Sequential(nn.Conv2d(3, 16, 3, padding = 1), nn.BatchNorm2d(16), nn.ReLU(inplace = True))
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(16, 10)

    def forward(self, x):
        x = self.avgpool(self.conv(x))
        return self.fc(flatten(x))


if __name__ == '__main__':
    resnet = SmallNet()

    learner = BYOL(
        resnet,
        image_size = 16,
        hidden_layer = 'avgpool',
        projection_size = 64,
        projection_hidden_size = 128,
        augment_fn = lambda x: x + 0.1 * torch.randn_like(x),
        augment_fn2 = lambda x: x.flip(-1),
        sem_num_simplices = 4
    )

    opt = torch.optim.Adam(learner.parameters(), lr=3e-4)

    def sample_unlabelled_images():
        return torch.randn(8, 3, 16, 16)

    for _ in range(4):
        images = sample_unlabelled_images()
        loss = learner(images)
        opt.zero_grad()
        loss.backward()
        opt.step()
        learner.update_moving_average() # update moving average of target encoder
        print(loss.item())

    # save your improved network
    learner.eval()
    embedding = learner(torch.randn(2, 3, 16, 16), return_embedding = True)
