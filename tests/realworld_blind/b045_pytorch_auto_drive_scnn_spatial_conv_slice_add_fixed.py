"""SCNN with the maintainers' fix for the issue: SpatialConv builds the message-passed map out of place from slices and torch.cat (non_inplace_forward)."""
# outcome: ok
# source: https://github.com/voldemortX/pytorch-auto-drive/issues/121
# repo: voldemortX/pytorch-auto-drive
# category: iteration
# twin: b044_pytorch_auto_drive_scnn_spatial_conv_slice_add.py
import math
from collections import OrderedDict

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
class DeepLabV1Head(nn.Module):
    def __init__(self, in_channels=128, num_classes=5, dilation=1):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, num_classes, 1)

    def forward(self, x):
        return self.conv(x)


@MODELS.register()
class SimpleLaneExist(nn.Module):
    def __init__(self, num_output, flattened_size=4500):
        super().__init__()
        self.pool = nn.AdaptiveAvgPool2d((3, 5))
        self.fc = nn.Linear(5 * 15, num_output)

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
            x = F.relu(x)

        return x


# ---- utils/models/common_models/plugins/spatial_conv.py ----
@MODELS.register()
class SpatialConv(nn.Module):
    # SCNN

    def __init__(self, num_channels=128):
        super().__init__()
        self.conv_d = nn.Conv2d(num_channels, num_channels, (1, 9), padding=(0, 4))
        self.conv_u = nn.Conv2d(num_channels, num_channels, (1, 9), padding=(0, 4))
        self.conv_r = nn.Conv2d(num_channels, num_channels, (9, 1), padding=(4, 0))
        self.conv_l = nn.Conv2d(num_channels, num_channels, (9, 1), padding=(4, 0))
        self._adjust_initializations(num_channels=num_channels)

    def _adjust_initializations(self, num_channels=128):
        # https://github.com/XingangPan/SCNN/issues/82
        bound = math.sqrt(2.0 / (num_channels * 9 * 5))
        nn.init.uniform_(self.conv_d.weight, -bound, bound)
        nn.init.uniform_(self.conv_u.weight, -bound, bound)
        nn.init.uniform_(self.conv_r.weight, -bound, bound)
        nn.init.uniform_(self.conv_l.weight, -bound, bound)

    def build_slice(self, vertical, reverse, shape):
        # refer to https://github.com/harryhan618/SCNN_Pytorch/blob/master/model.py
        slices = []
        if vertical: # h
            concat_dim = 2 
            length = shape[concat_dim]
            for i in range(length):
                slices.append(
                    (slice(None), slice(None), slice(i, i+1), slice(None))
                )
        else: # w
            concat_dim = 3
            length = shape[concat_dim]
            for i in range(length):
                slices.append(
                    (slice(None), slice(None), slice(None), slice(i, i+1))
                )
        if reverse:
            slices = slices[::-1]
        return slices, concat_dim

    def non_inplace_forward(self, input):
        output = input
        vertical = [True, True, False, False]
        reverse = [False, True, False, True]
        convs = [self.conv_d, self.conv_u, self.conv_r, self.conv_l]
        for ver, rev, conv in zip(vertical, reverse, convs):
            slices, dim = self.build_slice(ver, rev, input.shape)
            output_slices = []
            for idx, s in enumerate(slices):
                # the condition is to align with the original forward
                if (rev is False and idx > 0) or (rev is True and idx < len(slices) - 1 and idx > 0):
                    output_slices.append(
                        output[s]  + F.relu(conv(output_slices[-1]))
                    )
                else:
                    output_slices.append(output[s])
            if rev:
                output_slices = output_slices[::-1]
            output = torch.cat(output_slices, dim=dim)
            if ver is False and rev is True:
                break
        return output

    def forward(self, input):
        output = input

        if is_tracing():
            # PyTorch index+add_ will be ignored in traced graph
            # Down
            for i in range(1, output.shape[2]):
                output[:, :, i:i + 1, :] = output[:, :, i:i + 1, :].add(F.relu(self.conv_d(output[:, :, i - 1:i, :])))
            # Up
            for i in range(output.shape[2] - 2, 0, -1):
                output[:, :, i:i + 1, :] = output[:, :, i:i + 1, :].add(
                    F.relu(self.conv_u(output[:, :, i + 1:i + 2, :])))
            # Right
            for i in range(1, output.shape[3]):
                output[:, :, :, i:i + 1] = output[:, :, :, i:i + 1].add(F.relu(self.conv_r(output[:, :, :, i - 1:i])))
            # Left
            for i in range(output.shape[3] - 2, 0, -1):
                output[:, :, :, i:i + 1] = output[:, :, :, i:i + 1].add(
                    F.relu(self.conv_l(output[:, :, :, i + 1:i + 2])))
        else:
            output = self.non_inplace_forward(output)

        return output


# ---- utils/models/segmentation/_utils.py ----
class _SimpleSegmentationModel(nn.Module):
    def __init__(self, backbone, classifier, aux_classifier=None, recon_head=None,
                 lane_classifier=None, channel_reducer=None, scnn_layer=None):
        super(_SimpleSegmentationModel, self).__init__()
        self.backbone = backbone
        self.classifier = classifier
        self.aux_classifier = aux_classifier  # Name aux is already take for COCO pre-trained models
        self.lane_classifier = lane_classifier
        self.channel_reducer = channel_reducer  # Reduce ResNet feature channels to 128 as did in RESA
        self.scnn_layer = scnn_layer
        self.recon_head = recon_head

    def forward(self, x):
        # input_shape = x.shape[-2:]
        # contract: features is a dict of tensors
        features = self.backbone(x)
        result = OrderedDict()
        x = features['out']

        # For lane detection
        if self.channel_reducer is not None:
            x = self.channel_reducer(x)
        if self.scnn_layer is not None:
            x = self.scnn_layer(x)

        # Semantic segmentation
        x = self.classifier(x)
        # x = F.interpolate(x, size=(513, 513), mode='bilinear', align_corners=True)
        result['out'] = x

        # For lane detection
        if self.lane_classifier is not None:
            result['lane'] = self.lane_classifier(x.softmax(dim=1))

        # For COCO pre-trained models
        if self.aux_classifier is not None:
            x = features['aux']
            x = self.aux_classifier(x)
            # x = F.interpolate(x, size=input_shape, mode='bilinear', align_corners=True)
            result['aux'] = x

        return result


# ---- utils/models/segmentation/segmentation.py: standard_segmentation_model, built from the config
# through the registry (the backbone and heads are the stand-ins above) ----
@MODELS.register()
def standard_segmentation_model(backbone_cfg, classifier_cfg, lane_classifier_cfg=None, reducer_cfg=None,
                                spatial_conv_cfg=None):
    return _SimpleSegmentationModel(MODELS.from_dict(backbone_cfg), MODELS.from_dict(classifier_cfg),
                                    lane_classifier=MODELS.from_dict(lane_classifier_cfg),
                                    channel_reducer=MODELS.from_dict(reducer_cfg),
                                    scnn_layer=MODELS.from_dict(spatial_conv_cfg))


# ---- configs/lane_detection/scnn/resnet18_culane.py (the model part) ----
model = dict(
    name='standard_segmentation_model',
    backbone_cfg=dict(
        name='predefined_resnet_backbone',
        backbone_name='resnet18',
        return_layer='layer4',
        pretrained=True,
        replace_stride_with_dilation=[False, True, True]
    ),
    reducer_cfg=dict(
        name='RESAReducer',
        in_channels=256,
        reduce=128
    ),
    spatial_conv_cfg=dict(
        name='SpatialConv',
        num_channels=128
    ),
    classifier_cfg=dict(
        name='DeepLabV1Head',
        in_channels=128,
        num_classes=5,
        dilation=1
    ),
    lane_classifier_cfg=dict(
        name='SimpleLaneExist',
        num_output=5 - 1,
        flattened_size=4500
    )
)


if __name__ == '__main__':
    net = MODELS.from_dict(model)
    optimizer = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
    for step in range(2):
        images = torch.randn(2, 3, 64, 128)
        labels = torch.randint(0, 5, (2, 8, 16))
        lane_existence = torch.randint(0, 2, (2, 4)).float()
        outputs = net(images)
        loss = F.cross_entropy(outputs['out'], labels) + 0.1 * F.binary_cross_entropy_with_logits(outputs['lane'], lane_existence)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        print(step, loss.item())
