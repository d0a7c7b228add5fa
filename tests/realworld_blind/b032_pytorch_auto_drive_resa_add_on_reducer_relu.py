"""pytorch-auto-drive RESA_Net (resnet18_culane config): RESAReducer ends in F.relu, and RESA.forward shifts and adds feature maps into its input in place, `y.add_(self.alpha * F.relu(self.conv_d[i](y[:, :, idx, :])))`, twenty times on that ReLU output."""
# outcome: inplace-error
# source: https://github.com/voldemortX/pytorch-auto-drive/issues/121
# repo: voldemortX/pytorch-auto-drive
# category: residual
# twin: b033_pytorch_auto_drive_resa_add_on_reducer_relu_fixed.py
import math
import torch
from torch import nn as nn
from torch.nn import functional as F


# ---- utils/models/builder.py: the MODELS registry (a dict of classes built from config dicts) ----
class _Registry:
    def __init__(self):
        self._classes = {}

    def register(self):
        def wrap(cls):
            self._classes[cls.__name__] = cls
            return cls
        return wrap

    def from_dict(self, dict_params, **kwargs):
        params = dict(dict_params)
        name = params.pop('name')
        params.update({k: v for k, v in kwargs.items() if v is not None})
        return self._classes[name](**params)


MODELS = _Registry()


# ---- utils/models/_utils.py ----
def is_tracing() -> bool:
    # https://github.com/pytorch/pytorch/issues/42448
    if torch.__version__ >= '1.7.0':
        return torch.jit.is_tracing()
    elif torch.__version__ >= '1.6.0':
        return torch._C._is_tracing()
    else:
        return False


# ---- stand-ins for the torchvision resnet18 backbone (layer3 output, 256 channels at 1/8 scale)
# and the BUSD / EDLaneExist heads ----
@MODELS.register()
class predefined_resnet_backbone(nn.Module):
    def __init__(self, backbone_name='resnet18', return_layer='layer3', pretrained=False,
                 replace_stride_with_dilation=None):
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(3, 64, 3, stride=2, padding=1), nn.BatchNorm2d(64), nn.ReLU(inplace=True),
                                  nn.Conv2d(64, 128, 3, stride=2, padding=1), nn.BatchNorm2d(128), nn.ReLU(inplace=True),
                                  nn.Conv2d(128, 256, 3, stride=2, padding=1), nn.BatchNorm2d(256), nn.ReLU(inplace=True))

    def forward(self, x):
        return {'out': self.body(x)}


@MODELS.register()
class BUSD(nn.Module):
    def __init__(self, in_channels=128, num_classes=5):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, num_classes, 1)

    def forward(self, x):
        return F.interpolate(self.conv(x), scale_factor=8, mode='bilinear', align_corners=True)


@MODELS.register()
class EDLaneExist(nn.Module):
    def __init__(self, num_output, flattened_size=4500, dropout=0.1, pool='avg'):
        super().__init__()
        self.pool = nn.AdaptiveAvgPool2d((3, 5))
        self.fc = nn.Linear(128 * 15, num_output)

    def forward(self, x):
        return self.fc(self.pool(x).flatten(1))


# ---- utils/models/common_models/plugins/resa_reducer.py ----
@MODELS.register()
class RESAReducer(nn.Module):
    # Reduce channel (typically to 128), RESA code use no BN nor ReLU

    def __init__(self, in_channels=512, reduce=128, bn_relu=True):
        super(RESAReducer, self).__init__()
        self.bn_relu = bn_relu
        self.conv1 = nn.Conv2d(in_channels, reduce, 1, bias=False)
        if self.bn_relu:
            self.bn1 = nn.BatchNorm2d(reduce)

    def forward(self, x):
        x = self.conv1(x)
        if self.bn_relu:
            x = self.bn1(x)
            x = F.relu(x)  # saved-by

        return x


# ---- utils/models/common_models/plugins/resa_layer.py ----
@MODELS.register()
class RESA(nn.Module):
    # REcurrent Feature-Shift Aggregator in RESA paper

    def __init__(self, num_channels=128, iteration=5, alpha=2.0, trace_arg=None, os=8):
        super(RESA, self).__init__()
        # Different from SCNN, RESA uses bias=False & different convolution layers for each stride,
        # i.e. 4 * iteration layers vs. 4 layers in SCNN, maybe special init is not needed anymore:
        # https://github.com/ZJULearning/resa/blob/14b0fea6a1ab4f45d8f9f22fb110c1b3e53cf12e/models/resa.py#L21
        self.iteration = iteration
        self.alpha = alpha
        self.conv_d = nn.ModuleList(nn.Conv2d(num_channels, num_channels, (1, 9), padding=(0, 4), bias=False)
                                    for _ in range(iteration))
        self.conv_u = nn.ModuleList(nn.Conv2d(num_channels, num_channels, (1, 9), padding=(0, 4), bias=False)
                                    for _ in range(iteration))
        self.conv_r = nn.ModuleList(nn.Conv2d(num_channels, num_channels, (9, 1), padding=(4, 0), bias=False)
                                    for _ in range(iteration))
        self.conv_l = nn.ModuleList(nn.Conv2d(num_channels, num_channels, (9, 1), padding=(4, 0), bias=False)
                                    for _ in range(iteration))
        self._adjust_initializations(num_channels=num_channels)
        if trace_arg is not None:  # Pre-compute offsets for a TensorRT supported implementation
            h = (trace_arg['h'] - 1) // os + 1
            w = (trace_arg['w'] - 1) // os + 1
            self.offset_h = []
            self.offset_w = []
            for i in range(self.iteration):
                self.offset_h.append(h // 2 ** (self.iteration - i))
                self.offset_w.append(w // 2 ** (self.iteration - i))

    def _adjust_initializations(self, num_channels=128):
        # https://github.com/XingangPan/SCNN/issues/82
        bound = math.sqrt(2.0 / (num_channels * 9 * 5))
        for i in self.conv_d:
            nn.init.uniform_(i.weight, -bound, bound)
        for i in self.conv_u:
            nn.init.uniform_(i.weight, -bound, bound)
        for i in self.conv_r:
            nn.init.uniform_(i.weight, -bound, bound)
        for i in self.conv_l:
            nn.init.uniform_(i.weight, -bound, bound)

    def forward(self, x):
        y = x
        h, w = y.shape[-2:]
        if 2 ** self.iteration > min(h, w):
            print('Too many iterations for RESA, your image size may be too small.')

        # We do indexing here to avoid extra input parameters at __init__(), with almost none computation overhead.
        # Also, now it won't block arbitrary shaped input.
        # However, we still need an alternative to Gather for TensorRT
        # Down
        for i in range(self.iteration):
            if is_tracing():
                temp = torch.cat([y[:, :, self.offset_h[i]:, :], y[:, :, :self.offset_h[i], :]], dim=-2)
                y = y.add(self.alpha * F.relu(self.conv_d[i](temp)))
            else:
                idx = (torch.arange(h) + h // 2 ** (self.iteration - i)) % h
                y.add_(self.alpha * F.relu(self.conv_d[i](y[:, :, idx, :])))  # error: IPL001
        # Up
        for i in range(self.iteration):
            if is_tracing():
                temp = torch.cat([y[:, :, (h - self.offset_h[i]):, :], y[:, :, :(h - self.offset_h[i]), :]], dim=-2)
                y = y.add(self.alpha * F.relu(self.conv_u[i](temp)))
            else:
                idx = (torch.arange(h) - h // 2 ** (self.iteration - i)) % h
                y.add_(self.alpha * F.relu(self.conv_u[i](y[:, :, idx, :])))  # error: IPL001
        # Right
        for i in range(self.iteration):
            if is_tracing():
                temp = torch.cat([y[:, :, :, self.offset_w[i]:], y[:, :, :, :self.offset_w[i]]], dim=-1)
                y = y.add(self.alpha * F.relu(self.conv_r[i](temp)))
            else:
                idx = (torch.arange(w) + w // 2 ** (self.iteration - i)) % w
                y.add_(self.alpha * F.relu(self.conv_r[i](y[:, :, :, idx])))  # error: IPL001
        # Left
        for i in range(self.iteration):
            if is_tracing():
                temp = torch.cat([y[:, :, :, (w - self.offset_w[i]):], y[:, :, :, :(w - self.offset_w[i])]], dim=-1)
                y = y.add(self.alpha * F.relu(self.conv_l[i](temp)))
            else:
                idx = (torch.arange(w) - w // 2 ** (self.iteration - i)) % w
                y.add_(self.alpha * F.relu(self.conv_l[i](y[:, :, :, idx])))  # error: IPL001

        return y


# ---- utils/models/lane_detection/resa.py ----
@MODELS.register()
class RESA_Net(nn.Module):
    def __init__(self,
                 backbone_cfg,
                 reducer_cfg,
                 spatial_conv_cfg,
                 classifier_cfg,
                 lane_classifier_cfg,
                 trace_arg=None):
        super().__init__()
        self.backbone = MODELS.from_dict(backbone_cfg)
        # self.channel_reducer = RESAReducer(in_channels=in_channels, reduce=channel_reduce, bn_relu=False)
        self.channel_reducer = MODELS.from_dict(reducer_cfg)
        self.spatial_conv = MODELS.from_dict(spatial_conv_cfg, trace_arg=trace_arg)
        self.decoder = MODELS.from_dict(classifier_cfg)
        # self.decoder = PlainDecoder(num_classes=num_classes)
        self.lane_classifier = MODELS.from_dict(lane_classifier_cfg)
        # self.lane_classifier = RESALaneExist(num_output=num_classes - 1, flattened_size=flattened_size)

    def forward(self, x):
        x = self.backbone(x)
        if isinstance(x, dict):
            x = x['out']
        x = self.channel_reducer(x)
        x = self.spatial_conv(x)

        res = {'out': self.decoder(x),
               'lane': self.lane_classifier(x)}

        return res

# ---- configs/lane_detection/resa/resnet18_culane.py (the model part) ----
model = dict(
    name='RESA_Net',
    backbone_cfg=dict(
        name='predefined_resnet_backbone',
        backbone_name='resnet18',
        return_layer='layer3',
        pretrained=True,
        replace_stride_with_dilation=[False, True, True]
    ),
    reducer_cfg=dict(
        name='RESAReducer',
        in_channels=256,
        reduce=128
    ),
    spatial_conv_cfg=dict(
        name='RESA',
        num_channels=128,
        iteration=5,
        alpha=2.0
    ),
    classifier_cfg=dict(
        name='BUSD',
        in_channels=128,
        num_classes=5
    ),
    lane_classifier_cfg=dict(
        name='EDLaneExist',
        num_output=5 - 1,
        flattened_size=4500,
        dropout=0.1,
        pool='avg'
    )
)


# ---- a few training steps with the segmentation and lane-existence losses in a dict ----
if __name__ == '__main__':
    net = MODELS.from_dict(model)
    optimizer = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
    for step in range(2):
        images = torch.randn(2, 3, 256, 256)
        labels = torch.randint(0, 5, (2, 256, 256))
        lane_existence = torch.randint(0, 2, (2, 4)).float()
        outputs = net(images)
        losses = {'seg': F.cross_entropy(outputs['out'], labels),
                  'lane': F.binary_cross_entropy_with_logits(outputs['lane'], lane_existence)}
        loss = losses['seg'] + 0.1 * losses['lane']
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        print(step, {k: v.item() for k, v in losses.items()})
