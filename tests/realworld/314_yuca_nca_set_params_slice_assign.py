"""yuca's NCA.set_params writes evolved parameter vectors into the weights layer by slice assignment, `param[:] = nn.Parameter(...)`, while those conv parameters still require grad."""
# outcome: leaf-error
# source: https://github.com/riveSunder/yuca/commit/16f51b9c0553c79ff48dcf75c5531ad45d2c2f8d
# repo: riveSunder/yuca
# category: leaf
# twin: 315_yuca_nca_set_params_slice_assign_fixed.py
import unittest
from functools import reduce

import numpy as np

import torch
import torch.nn as nn


# ---- yuca/utils.py ----
def query_kwargs(key, default, **kwargs):

   return kwargs[key] if key in kwargs.keys() else default


# ---- yuca/activations.py ----
class Gaussian(nn.Module):

    def __init__(self, **kwargs):

        super(Gaussian, self).__init__()

        mu = query_kwargs("mu", 0.0, **kwargs)
        sigma = query_kwargs("sigma", 0.1, **kwargs)

        if type(mu) is not torch.Tensor:
            mu = torch.tensor(mu)
        if type(sigma) is not torch.Tensor:
            sigma = torch.tensor(sigma)

        self.mu = nn.Parameter(mu)
        self.sigma = nn.Parameter(sigma)

        self.register_parameter("mu", self.mu)
        self.register_parameter("sigma", self.sigma)

        self.mode = query_kwargs("mode", 0, **kwargs)

    def forward(self, x):
        eps = 1e-9

        if type(x) is not torch.Tensor:
            x = torch.tensor(x)

        if self.mode:
            result = torch.exp(- ((x - self.mu) / (eps + self.sigma))**2 / 2 ) * 2 -1
        else:
            result = torch.exp(- ((x - self.mu) / (eps + self.sigma))**2 / 2 )

        return result


# ---- yuca/kernels.py ----
def get_gaussian_kernel(radius=13, mu=0.5, sigma=0.15, r_scale=1.0):

    eps = 1e-9

    xx, yy = np.meshgrid(np.arange(-radius, radius + 1), \
            np.arange(-radius, radius + 1))

    grid = np.sqrt(xx**2 + yy**2) / radius * r_scale

    gaussian = Gaussian(mu=mu, sigma=sigma)

    kernel = gaussian(grid.reshape(1, 1, radius * 2 + 1, radius * 2 + 1))
    kernel = kernel - kernel.min()
    kernel = kernel / (eps + kernel.sum())

    return kernel


# ---- yuca/ca/common.py ----
class CA(nn.Module):
    """
    """

    def __init__(self, **kwargs):
        super(CA, self).__init__()

        self.kernel_radius = query_kwargs("kernel_radius", 13, **kwargs)
        self.my_device = query_kwargs("device", "cpu", **kwargs)

        self.conv_mode = query_kwargs("conv_mode", "circular", **kwargs)

        # CA mode. Options are 'neural' or 'functional'.
        self.ca_mode = query_kwargs("ca_mode", "functional", **kwargs)


        self.external_channels = query_kwargs("external_channels", 1, **kwargs)
        self.internal_channels = query_kwargs("internal_channels", 1, **kwargs)
        self.alive_threshold = query_kwargs("alive_threshold", 0.1, **kwargs)

        self.use_grad = query_kwargs("use_grad", False, **kwargs)
        self.tag = query_kwargs("tag", "notag", **kwargs)


        self.neighborhood_kernels = None
        self.neighborhood_dim = None

        self.genesis_fns = []
        self.persistence_fns = []

        self.id_kernel_config = None
        self.neighborhood_kernel_config = None
        self.genesis_fn_config = None
        self.persistence_fn_config = None

        self.input_filepath = query_kwargs("input_filepath", None, **kwargs)


    def reset(self):

        self.t_count = 0.0

    def add_identity_kernel(self, **kwargs):

        if "kernel" in kwargs.keys():
            self.id_kernel = kwargs["kernel"]
        else:
            self.id_kernel = torch.tensor([[[\
                    [0, 0.0, 0,], \
                    [0, 1.0, 0], \
                    [0, 0.0, 0]]]])

        kernel_dims = len(self.id_kernel.shape)

        error_msg = f"id kernel expected to have dim 4," \
                f" had dim {kernel_dims} instead"

        assert len(self.id_kernel.shape) == 4, error_msg

        dim_x = self.id_kernel.shape[-1]
        dim_y = self.id_kernel.shape[-2]

        error_msg = f"expected square kernel, got {dim_x} by {dim_y}"

        assert dim_x == dim_y, error_msg

        self.id_dim = dim_x


    def initialize_id_layer(self):

        padding = (self.id_dim - 1) // 2

        groups = 1 if self.internal_channels % self.external_channels \
                else self.external_channels

        self.id_layer = nn.Conv2d(self.external_channels, \
                self.internal_channels, self.id_dim, padding=padding, \
                groups = groups,\
                padding_mode = self.conv_mode, bias=False)

        for param in self.id_layer.named_parameters():
            param[1].requires_grad = False
            param[1][:] = self.id_kernel


    def add_neighborhood_kernel(self, kernel):
        """
        add kernels defining CA neighborhoods.
        """

        if type(kernel) is not torch.Tensor:
            kernel = torch.tensor(kernel, requires_grad=False)
        else:
            kernel = kernel.clone().detach().requires_grad_(False)

        if len(kernel.shape) == 2:
            kernel = torch.reshape(kernel, \
                    (1, 1, \
                    kernel.shape[0], \
                    kernel.shape[1]))
        elif len(kernel.shape) == 3:
            kernel = torch.reshape(kernel, \
                    (1, kernel.shape[0], \
                    kernel.shape[1]))

        kernel_dims = len(kernel.shape)

        error_msg = f"id kernel expected to have dim 4," \
                f" had dim {kernel_dims} instead"

        assert len(kernel.shape) == 4, error_msg

        dim_x = kernel.shape[-1]
        dim_y = kernel.shape[-2]

        error_msg = f"expected square kernel, got {dim_x} by {dim_y}"

        assert dim_x == dim_y, error_msg

        self.neighborhood_kernels = kernel
        self.neighborhood_dim = dim_x

    def initialize_neighborhood_layer(self):
        """
        initialized a convolutional layer containing neighborhod functions
        """

        padding = (self.neighborhood_dim - 1) // 2

        groups = 1 if self.internal_channels % self.external_channels \
                else self.external_channels

        self.neighborhood_layer = nn.Conv2d(self.external_channels, \
                self.internal_channels, \
                self.neighborhood_dim, padding=padding, \
                groups=groups, \
                padding_mode = self.conv_mode, bias=False)


        for param in self.neighborhood_layer.named_parameters():
            param[1].requires_grad = False
            param[1][:] = self.neighborhood_kernels

    def id_conv(self, universe):
        """
        """

        return self.id_layer(universe)

    def neighborhood_conv(self, universe):

        return self.neighborhood_layer(universe)

    def update_universe(self, identity, neighborhoods):

        return identity + neighborhoods

    def update_helper(self, universe):

        identity = self.id_conv(universe)
        neighborhoods = self.neighborhood_conv(universe)

        update = self.update_universe(identity, neighborhoods)

        return update

    def forward(self, universe):

        update = self.update_helper(universe)

        new_universe = torch.clamp(universe + self.dt * update, 0, 1.0)

        self.t_count += self.dt

        return new_universe


# ---- yuca/ca/neural.py ----
class NCA(CA):
    """
    NCA - Neural Cellular Automata

    Similar to and inheriting from CA

    uses neural networks for genesis and peristence or growth functions
    """

    def __init__(self, **kwargs):
        self.hidden_channels = query_kwargs("hidden_channels", 128, **kwargs)
        super(NCA, self).__init__(**kwargs)

        self.default_init()
        self.reset()

    def default_init(self):

        self.add_identity_kernel()
        self.initialize_id_layer()

        nbhd_kernels = None

        for mm in range(self.internal_channels):

            my_radius = self.kernel_radius

            mu = np.random.rand()
            sigma = np.random.rand()

            mu = np.clip(mu, 0.05, 0.95)
            sigma = np.clip(sigma, 0.0005, 0.1)

            nbhd_kernel = get_gaussian_kernel(radius=my_radius, \
                    mu=mu, sigma=sigma)

            if nbhd_kernels is None:
                nbhd_kernels = nbhd_kernel
            else:
                nbhd_kernels = torch.cat([nbhd_kernels, nbhd_kernel], dim=0)

        self.add_neighborhood_kernel(nbhd_kernels)
        self.initialize_neighborhood_layer()

        self.initialize_weight_layer()

        self.dt = 0.1

    def initialize_weight_layer(self):

        self.weights_layer = nn.Sequential(\
                nn.Conv2d(\
                    self.external_channels + self.internal_channels,\
                    self.hidden_channels, 1, \
                    padding=0, \
                    padding_mode = self.conv_mode, bias=True),\
                nn.ReLU(), \
                nn.Conv2d(\
                    self.hidden_channels, self.external_channels, 1, \
                    padding=0, \
                    padding_mode = self.conv_mode, bias=False)\
                )


    def id_conv(self, universe):
        # shared with CCA

        return self.id_layer(universe)

    def neighborhood_conv(self, universe):
        # shared with CCA

        return self.neighborhood_layer(universe)

    def update_universe(self, identity, neighborhoods):

        # TODO: NCA version
        model_input = torch.cat([identity, neighborhoods], dim=1)
        update = self.weights_layer(model_input)
        return update

    def to_device(self, my_device):
        """
        additional functionality beyong `to` function from nn.Module
        to ensure all parameters get moved for CCA
        """
        # TODO: implement for nca (should be simpler)
        pass

        self.to(my_device)
        self.my_device = my_device
        self.id_layer.to(my_device)
        self.neighborhood_layer.to(my_device)
        self.weights_layer.to(my_device)


    def get_params(self):
        # TODO: implement nca version (simpler)

        params = np.array([])


        for hh, param in enumerate(self.weights_layer.named_parameters()):
            params = np.append(params, param[1].detach().cpu().numpy().ravel())

        return params

    def set_params(self, params):
        # TODO: implement nca version (simpler)

        param_start = 0

        for hh, param in self.weights_layer.named_parameters():

            param_stop = param_start + reduce(lambda x,y: x*y, param.shape)
            param[:] = nn.Parameter(  # error: IPL002
                    torch.tensor(
                    params[param_start:param_stop].reshape(param.shape),
                    requires_grad = self.use_grad),
                    requires_grad = self.use_grad)

            param_start = param_stop

    def no_grad(self):

        self.use_grad = False

        for hh, param in enumerate(self.weights_layer.parameters()):
            param.requires_grad = False

    def include_parameters(self):
        pass


# ---- testing/yuca/ca/test_neural.py ----
class TestNCA(unittest.TestCase):

    def setUp(self):
        pass

    def test_multiverse_set_params(self):

        ca = NCA(hidden_channels=16)
        ca.default_init()

        params = ca.get_params()
        params = np.random.rand(*params.shape)

        ca.set_params(params)

        params_again = ca.get_params()

        self.assertNotIn(False, params.round(4) == params_again.round(4))

        ca.default_init()

        params = ca.get_params()
        params = np.random.rand(*params.shape)

        ca.set_params(params)

        params_again = ca.get_params()

        self.assertNotIn(False, params.round(4) == params_again.round(4))

        x = torch.rand(2, 1, 32, 32)
        new_x = ca.forward(x)
        self.assertEqual(new_x.shape, x.shape)


if __name__ == "__main__":
    # the test method run directly (unittest.main would turn the error into an exit status)
    TestNCA("test_multiverse_set_params").test_multiverse_set_params()
    print("ok")
