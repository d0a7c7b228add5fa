"""FCHarDNet CatConv2d/test.py: the benchmark copies a random kernel into the convolutions with `cconv.weight[:,:,:,:] = W[:,:,:,:]`, a write into a view of a parameter that requires grad."""
# outcome: leaf-error
# source: https://github.com/PingoLH/FCHarDNet/issues/61
# repo: PingoLH/FCHarDNet
# category: leaf
# twin: b010_fchardnet_catconv_test_weight_slice_assign_fixed.py
from __future__ import division
from __future__ import print_function

import argparse
import math
import time

import torch
from torch import nn

TIME_SCALES = {'s': 1, 'ms': 1000, 'us': 1000000}

parser = argparse.ArgumentParser()
parser.add_argument('example', choices=['py', 'cpp', 'cuda'], nargs='?', default='py')
parser.add_argument('-b', '--batch-size', type=int, default=1)
parser.add_argument('-r', '--runs', type=int, default=2)
parser.add_argument('--scale', choices=['s', 'ms', 'us'], default='us')
parser.add_argument('-c', '--cuda', action='store_true')
parser.add_argument('-d', '--double', action='store_true')
options = parser.parse_args([])


# ---- catconv2d (the CUDA extension; in Python here: a convolution over the concatenated inputs) ----
class CatConv2d(nn.Conv2d):
    def __init__(self, in_channels, out_channels, kernel_size, relu=False):
        super().__init__(in_channels, out_channels, kernel_size,
                         padding=kernel_size[0] // 2, bias=True)
        self.relu = relu

    def forward(self, x_list):
        out = super().forward(torch.cat(x_list, 1))
        return torch.relu(out) if self.relu else out


device = torch.device("cuda") if options.cuda else torch.device("cpu")
dtype = torch.float64 if options.double else torch.float32

x_list = [3, 1, 4, 2]
img_sz = 9
output_ch = 5

X_list = [torch.randn(options.batch_size, x, img_sz, img_sz).to(device, dtype) for x in x_list]

print("in channels = ", sum(x_list))

W = torch.randn(output_ch, sum(x_list), 3, 3).to(device, dtype)
bias = torch.randn(output_ch).to(device, dtype)
relu = nn.ReLU(True)

cconv = CatConv2d( sum(x_list), output_ch, (3,3), relu=False).to(device, dtype)
cconv.weight[:,:,:,:] = W[:,:,:,:]  # error: IPL002
cconv.bias[:] = bias[:]  # error: IPL002


conv = nn.Conv2d(sum(x_list), output_ch, kernel_size=3, stride=1, bias=True, padding=1).to(device, dtype)
conv.weight[:,:,:,:] = W[:,:,:,:]  # error: IPL002
conv.bias[:] = bias[:]  # error: IPL002

out = cconv(X_list)
out2 = conv(torch.cat(X_list,1))

print("top 10 difference:", torch.topk((abs(out-out2)).flatten(), 10)[0])

t = time.time()
for _ in range(options.runs):
    out = cconv(X_list)
print("CatConv:   ", time.time()-t)
