"""wolf's Affine coupling transform as the pull request changed it: `scale = log_scale.clone().mul_(0.5).tanh_().mul(self.alpha).add(1.0)`, so the in-place rescaling runs on a copy of the chunk."""
# outcome: ok
# source: https://github.com/XuezheMax/wolf/pull/1
# repo: XuezheMax/wolf
# category: residual
# twin: 816_wolf_affine_coupling_chunk_log_scale_mul_.py
import math
from typing import Dict, Tuple
import torch
import torch.nn as nn


# ---- stand-in for the `overrides` package (not installed here) ----
def overrides(method):
    return method


# ---- wolf/flows/flow.py ----
class Flow(nn.Module):
    """
    Normalizing Flow base class
    """
    _registry = dict()

    def __init__(self, inverse):
        super(Flow, self).__init__()
        self.inverse = inverse

    def forward(self, *inputs, **kwargs) -> Tuple[torch.Tensor, torch.Tensor]:
        """

        Args:
            *input: input [batch, *input_size]

        Returns: out: Tensor [batch, *input_size], logdet: Tensor [batch]
            out, the output of the flow
            logdet, the log determinant of :math:`\partial output / \partial input`
        """
        raise NotImplementedError

    def backward(self, *inputs, **kwargs) -> Tuple[torch.Tensor, torch.Tensor]:
        """

        Args:
            *input: input [batch, *input_size]

        Returns: out: Tensor [batch, *input_size], logdet: Tensor [batch]
            out, the output of the flow
            logdet, the log determinant of :math:`\partial output / \partial input`
        """
        raise NotImplementedError

    def init(self, *input, **kwargs) -> Tuple[torch.Tensor, torch.Tensor]:
        raise NotImplementedError

    def fwdpass(self, x: torch.Tensor, *h, init=False, init_scale=1.0, **kwargs) -> Tuple[torch.Tensor, torch.Tensor]:
        """

        Args:
            x: Tensor
                The random variable before flow
            h: list of object
                other conditional inputs
            init: bool
                perform initialization or not (default: False)
            init_scale: float
                initial scale (default: 1.0)

        Returns: y: Tensor, logdet: Tensor
            y, the random variable after flow
            logdet, the log determinant of :math:`\partial y / \partial x`
            Then the density :math:`\log(p(y)) = \log(p(x)) - logdet`

        """
        if self.inverse:
            if init:
                raise RuntimeError('inverse flow shold be initialized with backward pass')
            else:
                return self.backward(x, *h, **kwargs)
        else:
            if init:
                return self.init(x, *h, init_scale=init_scale, **kwargs)
            else:
                return self.forward(x, *h, **kwargs)


# ---- wolf/flows/couplings/transform.py (Transform, Additive, Affine) ----
class Transform():
    def calc_params(self, params):
        return params

    @staticmethod
    def fwd(z: torch.Tensor, params) -> Tuple[torch.Tensor, torch.Tensor]:
        raise NotImplementedError

    @staticmethod
    def bwd(z: torch.Tensor, params) -> Tuple[torch.Tensor, torch.Tensor]:
        raise NotImplementedError

    def __str__(self):
        return self.__class__.__name__ + '(' + self.extra_repr() + ')'

    def extra_repr(self):
        return ''


class Additive(Transform):
    def __init__(self):
        super(Additive, self).__init__()

    @staticmethod
    @overrides
    def fwd(z: torch.Tensor, params) -> Tuple[torch.Tensor, torch.Tensor]:
        mu = params
        z = z + mu
        logdet = z.new_zeros(z.size(0))
        return z, logdet

    @staticmethod
    @overrides
    def bwd(z: torch.Tensor, params) -> Tuple[torch.Tensor, torch.Tensor]:
        mu = params
        z = z - mu
        logdet = z.new_zeros(z.size(0))
        return z, logdet


class Affine(Transform):
    def __init__(self, dim, alpha):
        super(Affine, self).__init__()
        self.dim = dim
        self.alpha = alpha

    @overrides
    def calc_params(self, params):
        mu, log_scale = params.chunk(2, dim=self.dim)
        scale = log_scale.clone().mul_(0.5).tanh_().mul(self.alpha).add(1.0)
        return mu, scale

    @staticmethod
    @overrides
    def fwd(z: torch.Tensor, params) -> Tuple[torch.Tensor, torch.Tensor]:
        mu, scale = params
        z = scale * z + mu
        logdet = scale.log().view(z.size(0), -1).sum(dim=1)
        return z, logdet

    @staticmethod
    @overrides
    def bwd(z: torch.Tensor, params) -> Tuple[torch.Tensor, torch.Tensor]:
        mu, scale = params
        z = (z - mu).div(scale + 1e-12)
        logdet = scale.log().view(z.size(0), -1).sum(dim=1) * -1.0
        return z, logdet

    @overrides
    def extra_repr(self):
        return 'dim={}, alpha={}'.format(self.dim, self.alpha)


# ---- wolf/nnet/weight_norm.py ----
class LinearWeightNorm(nn.Module):
    def __init__(self, in_features, out_features, bias=True):
        super(LinearWeightNorm, self).__init__()
        self.linear = nn.Linear(in_features, out_features, bias=bias)
        self.reset_parameters()

    def reset_parameters(self):
        nn.init.normal_(self.linear.weight, mean=0.0, std=0.05)
        if self.linear.bias is not None:
            nn.init.constant_(self.linear.bias, 0)
        self.linear = nn.utils.weight_norm(self.linear)

    def extra_repr(self):
        return 'in_features={}, out_features={}, bias={}'.format(
            self.in_features, self.out_features, self.bias is not None
        )

    def init(self, x, init_scale=1.0):
        with torch.no_grad():
            # [batch, out_features]
            out = self(x).view(-1, self.linear.out_features)
            # [out_features]
            mean = out.mean(dim=0)
            std = out.std(dim=0)
            inv_stdv = init_scale / (std + 1e-6)

            self.linear.weight_g.mul_(inv_stdv.unsqueeze(1))
            if self.linear.bias is not None:
                self.linear.bias.add_(-mean).mul_(inv_stdv)
            return self(x)

    def forward(self, input):
        return self.linear(input)


# ---- wolf/flows/couplings/blocks.py ----
class NICEMLPBlock(nn.Module):
    def __init__(self, in_features, out_features, hidden_features, activation):
        super(NICEMLPBlock, self).__init__()
        assert activation in ['relu', 'elu', 'leaky_relu']
        self.fc1 = nn.Linear(in_features, hidden_features, bias=True)
        self.fc2 = nn.Linear(hidden_features, hidden_features, bias=True)
        self.fc3 = LinearWeightNorm(hidden_features, out_features, bias=True)

        if activation == 'relu':
            self.activation = nn.ReLU(inplace=True)
        elif activation == 'elu':
            self.activation = nn.ELU(inplace=True)
        else:
            self.activation = nn.LeakyReLU(inplace=True, negative_slope=1e-1)
        self.reset_parameters()

    def reset_parameters(self):
        nn.init.constant_(self.fc1.bias, 0.0)
        nn.init.constant_(self.fc2.bias, 0.0)

    def forward(self, x):
        # fc1
        out = self.activation(self.fc1(x))
        # fc2
        out = self.activation(self.fc2(out))
        # fc3
        out = self.fc3(out)
        return out

    def init(self, x, init_scale=1.0):
        with torch.no_grad():
            # init fc1
            out = self.activation(self.fc1(x))
            # init fc2
            out = self.activation(self.fc2(out))
            # fc3
            out = self.fc3.init(out, init_scale=0.0 * init_scale)
            return out


# ---- wolf/flows/couplings/coupling.py (NICE1d; NICE2d calls the same Affine.calc_params) ----
class NICE1d(Flow):
    """
    NICE Flow for 1D data
    """
    def __init__(self, in_features, hidden_features=None, inverse=False, split_type='continuous',
                 order='up', transform='affine', alpha=1.0, type='mlp', activation='elu'):
        super(NICE1d, self).__init__(inverse)
        self.in_features = in_features
        self.factor = 2
        assert split_type in ['continuous', 'skip']
        assert in_features % self.factor == 0
        assert order in ['up', 'down']
        self.split_type = split_type
        self.up = order == 'up'

        if hidden_features is None:
            hidden_features = min(8 * in_features, 512)

        out_features = in_features // self.factor
        in_features = in_features - out_features
        self.z1_features = in_features if self.up else out_features

        assert transform in ['additive', 'affine']
        if transform == 'additive':
            self.transform = Additive()
            self.analytic_bwd = True
        elif transform == 'affine':
            self.transform = Affine(dim=-1, alpha=alpha)
            self.analytic_bwd = True
            out_features = out_features * 2
        else:
            raise ValueError('unknown transform: {}'.format(transform))

        assert type in ['mlp']
        if type == 'mlp':
            self.net = NICEMLPBlock(in_features, out_features, hidden_features, activation)

    def split(self, z):
        split_dim = z.dim() - 1
        split_type = self.split_type
        dim = z.size(split_dim)
        if split_type == 'continuous':
            return z.split([self.z1_features, dim - self.z1_features], dim=split_dim)
        elif split_type == 'skip':
            idx1 = torch.tensor(list(range(0, dim, 2))).to(z.device)
            idx2 = torch.tensor(list(range(1, dim, 2))).to(z.device)
            z1 = z.index_select(split_dim, idx1)
            z2 = z.index_select(split_dim, idx2)
            return z1, z2
        else:
            raise ValueError('unknown split type: {}'.format(split_type))

    def unsplit(self, z1, z2):
        split_dim = z1.dim() - 1
        split_type = self.split_type
        if split_type == 'continuous':
            return torch.cat([z1, z2], dim=split_dim)
        elif split_type == 'skip':
            z = torch.cat([z1, z2], dim=split_dim)
            dim = z1.size(split_dim)
            idx = torch.tensor([i // 2 if i % 2 == 0 else i // 2 + dim for i in range(dim * 2)]).to(z.device)
            return z.index_select(split_dim, idx)
        else:
            raise ValueError('unknown split type: {}'.format(split_type))

    def calc_params(self, z: torch.Tensor):
        params = self.net(z)
        return params

    def init_net(self, z: torch.Tensor, init_scale=1.0):
        params = self.net.init(z, init_scale=init_scale)
        return params

    @overrides
    def forward(self, input: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        """
        Args:
            input: Tensor
                input tensor [batch, in_channels, H, W]
        Returns: out: Tensor , logdet: Tensor
            out: [batch, in_channels, H, W], the output of the flow
            logdet: [batch], the log determinant of :math:`\partial output / \partial input`
        """
        # [batch, length, in_channels]
        z1, z2 = self.split(input)
        # [batch, length, features]
        z, zp = (z1, z2) if self.up else (z2, z1)

        params = self.transform.calc_params(self.calc_params(z))
        zp, logdet = self.transform.fwd(zp, params)

        z1, z2 = (z, zp) if self.up else (zp, z)
        return self.unsplit(z1, z2), logdet

    @overrides
    def backward(self, input: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        """
        Args:
            input: Tensor
                input tensor [batch, in_channels, H, W]
        Returns: out: Tensor , logdet: Tensor
            out: [batch, in_channels, H, W], the output of the flow
            logdet: [batch], the log determinant of :math:`\partial output / \partial input`
        """
        if self.analytic_bwd:
            return self.backward_analytic(input)
        else:
            return self.backward_iterative(input)

    def backward_analytic(self, z: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        # [batch, length, in_channels]
        z1, z2 = self.split(z)
        # [batch, length, features]
        z, zp = (z1, z2) if self.up else (z2, z1)

        params = self.transform.calc_params(self.calc_params(z))
        zp, logdet = self.transform.bwd(zp, params)

        z1, z2 = (z, zp) if self.up else (zp, z)
        return self.unsplit(z1, z2), logdet

    def backward_iterative(self, z: torch.Tensor, maxIter=100) -> Tuple[torch.Tensor, torch.Tensor]:
        # [batch, length, in_channels]
        z1, z2 = self.split(z)
        # [batch, length, features]
        z, zp = (z1, z2) if self.up else (z2, z1)

        params = self.transform.calc_params(self.calc_params(z))
        zp_org = zp
        eps = 1e-6
        for iter in range(maxIter):
            new_zp, logdet = self.transform.bwd(zp, params)
            new_zp = zp_org - new_zp
            diff = torch.abs(new_zp - zp).max().item()
            zp = new_zp
            if diff < eps:
                break

        _, logdet = self.transform.fwd(zp, params)
        z1, z2 = (z, zp) if self.up else (zp, z)
        return self.unsplit(z1, z2), logdet * -1.0

    @overrides
    def init(self, data: torch.Tensor, init_scale=1.0) -> Tuple[torch.Tensor, torch.Tensor]:
        with torch.no_grad():
            # [batch, length, in_channels]
            z1, z2 = self.split(data)
            # [batch, length, features]
            z, zp = (z1, z2) if self.up else (z2, z1)

            params = self.transform.calc_params(self.init_net(z, init_scale=init_scale))
            zp, logdet = self.transform.fwd(zp, params)

            z1, z2 = (z, zp) if self.up else (zp, z)
            return self.unsplit(z1, z2), logdet

    @overrides
    def extra_repr(self):
        return 'inverse={}, in_features={}, split={}, order={}, factor={}, transform={}'.format(self.inverse, self.in_features,
                                                                                                self.split_type, 'up' if self.up else 'down',
                                                                                                self.factor, self.transform)

    @classmethod
    def from_params(cls, params: Dict) -> "NICE1d":
        return NICE1d(**params)


if __name__ == '__main__':
    # data-dependent init, then maximum-likelihood training under a standard normal prior (random data)
    torch.manual_seed(0)
    flow = NICE1d(8, hidden_features=16, transform='affine', alpha=1.0, activation='elu')
    data = torch.randn(16, 8)
    flow.fwdpass(data, init=True, init_scale=1.0)
    optimizer = torch.optim.Adam(flow.parameters(), lr=1e-3)
    for step in range(2):
        x = torch.randn(16, 8)
        z, logdet = flow.fwdpass(x)
        log_prob = -0.5 * (z ** 2).sum(dim=1) - 0.5 * 8 * math.log(2 * math.pi)
        loss = -(log_prob + logdet).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        print(step, loss.item())
