"""SOTR MaskHead, fixed as the thread says: the FPN levels are summed out of place, `feature_add_all_level = feature_add_all_level + self.convs_all_levels[i](mask_feat)`."""
# outcome: ok
# source: https://github.com/easton-cau/SOTR/issues/19
# repo: easton-cau/SOTR
# category: residual
# twin: 959_sotr_mask_head_feature_add_iadd.py
from collections import namedtuple
from types import SimpleNamespace
from typing import List

import torch
import torch.nn as nn

# detectron2.layers.ShapeSpec, as far as MaskHead uses it
ShapeSpec = namedtuple("ShapeSpec", ["channels", "height", "width", "stride"])


# ---- adet/modeling/sotr/sotr.py (MaskHead) ----
class MaskHead(nn.Module):
    def __init__(self, cfg, input_shape: List[ShapeSpec]):
        """
        SOTR Mask Head.
        """
        super().__init__()

        self.mask_on = cfg.MODEL.MASK_ON
        self.num_masks = cfg.MODEL.SOTR.NUM_MASKS
        self.mask_in_features = cfg.MODEL.SOTR.MASK_IN_FEATURES
        self.mask_in_channels = cfg.MODEL.SOTR.MASK_IN_CHANNELS
        self.mask_channels = cfg.MODEL.SOTR.MASK_CHANNELS
        self.num_levels = len(input_shape)
        assert self.num_levels == len(self.mask_in_features), \
            print("Input shape should match the features.")

        norm = None if cfg.MODEL.SOTR.NORM == "none" else cfg.MODEL.SOTR.NORM

        self.convs_all_levels = nn.ModuleList()
        for i in range(self.num_levels):
            convs_per_level = nn.Sequential()
            if i == 0:
                conv_tower = list()
                conv_tower.append(nn.Conv2d(
                    self.mask_in_channels, self.mask_channels,
                    kernel_size=3, stride=1,
                    padding=1, bias=norm is None
                ))
                if norm == "GN":
                    conv_tower.append(nn.GroupNorm(32, self.mask_channels))
                conv_tower.append(nn.ReLU(inplace=False))
                convs_per_level.add_module('conv' + str(i), nn.Sequential(*conv_tower))
                self.convs_all_levels.append(convs_per_level)
                continue

            for j in range(i):
                if j == 0:
                    chn = self.mask_in_channels
                    conv_tower = list()
                    conv_tower.append(nn.Conv2d(
                        chn, self.mask_channels,
                        kernel_size=3, stride=1,
                        padding=1, bias=norm is None
                    ))
                    if norm == "GN":
                        conv_tower.append(nn.GroupNorm(32, self.mask_channels))
                    conv_tower.append(nn.ReLU(inplace=False))
                    convs_per_level.add_module('conv' + str(j), nn.Sequential(*conv_tower))
                    upsample_tower = nn.Upsample(
                        scale_factor=2, mode='bilinear', align_corners=False)
                    convs_per_level.add_module(
                        'upsample' + str(j), upsample_tower)
                    continue
                conv_tower = list()
                conv_tower.append(nn.Conv2d(
                    self.mask_channels, self.mask_channels,
                    kernel_size=3, stride=1,
                    padding=1, bias=norm is None
                ))
                if norm == "GN":
                    conv_tower.append(nn.GroupNorm(32, self.mask_channels))
                conv_tower.append(nn.ReLU(inplace=False))
                convs_per_level.add_module('conv' + str(j), nn.Sequential(*conv_tower))
                upsample_tower = nn.Upsample(
                    scale_factor=2, mode='bilinear', align_corners=False)
                convs_per_level.add_module('upsample' + str(j), upsample_tower)

            self.convs_all_levels.append(convs_per_level)

        self.conv_pred = nn.Sequential(
            nn.Conv2d(
                self.mask_channels, self.num_masks,
                kernel_size=1, stride=1,
                padding=0, bias=norm is None),
            nn.GroupNorm(32, self.num_masks),
            nn.ReLU(inplace=True)
        )

        for modules in [self.convs_all_levels, self.conv_pred]:
            for l in modules.modules():
                if isinstance(l, nn.Conv2d):
                    torch.nn.init.normal_(l.weight, std=0.01)
                    if l.bias is not None:
                        nn.init.constant_(l.bias, 0)

    def forward(self, features):
        assert len(features) == self.num_levels, \
            print("The number of input features should be equal to the supposed level.")

        feature_add_all_level = self.convs_all_levels[0](features[0])
        for i in range(1, self.num_levels):
            mask_feat = features[i]
            feature_add_all_level = feature_add_all_level + self.convs_all_levels[i](mask_feat)

        mask_pred = self.conv_pred(feature_add_all_level)
        return mask_pred


if __name__ == "__main__":
    # the SOTR config keys MaskHead reads (tiny channels), and random p2-p5 features
    # instead of the detectron2 FPN backbone and COCO loader
    cfg = SimpleNamespace(MODEL=SimpleNamespace(
        MASK_ON=True,
        SOTR=SimpleNamespace(
            NUM_MASKS=32,
            MASK_IN_FEATURES=["p2", "p3", "p4", "p5"],
            MASK_IN_CHANNELS=8,
            MASK_CHANNELS=32,
            NORM="GN",
        ),
    ))
    input_shape = [ShapeSpec(channels=8, height=None, width=None, stride=s) for s in (4, 8, 16, 32)]
    mask_head = MaskHead(cfg, input_shape)
    optimizer = torch.optim.SGD(mask_head.parameters(), lr=0.01, momentum=0.9)
    for it in range(2):
        features = [torch.randn(2, 8, 16 // 2 ** k, 16 // 2 ** k) for k in range(4)]
        mask_pred = mask_head(features)
        loss = mask_pred.sigmoid().mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        print(it, loss.item())
