"""DeepETPicker 3D residual U-Net with PR #15 applied: ExtResNetBlock adds the residual out of place (`out = out + residual`), so conv3's ReLU output stays as ReLU saved it."""
# outcome: ok
# source: https://github.com/cbmi-group/DeepETPicker/pull/15
# repo: cbmi-group/DeepETPicker
# category: residual
# twin: 991_deepetpicker_ext_resnet_block_relu_residual_iadd.py
import argparse
import warnings
from functools import partial

import torch
import torch.nn as nn
from torch.nn import functional as F
from torch.nn import BatchNorm3d
from torch.utils.data import DataLoader
import pytorch_lightning as pl
from pytorch_lightning import Trainer

warnings.simplefilter("ignore")


# ---- model/residual_unet_att.py (the path the default options take: use_att, use_lw, use_coord, use_IP off) ----
def normalization(planes, norm='bn'):
    if norm == 'bn':
        m = nn.BatchNorm3d(planes)
    elif norm == 'gn':
        m = nn.GroupNorm(4, planes)
    elif norm == 'in':
        m = nn.InstanceNorm3d(planes)
    else:
        raise ValueError('normalization type {} is not supported'.format(norm))
    return m


# Residual 3D UNet
class ResidualUNet3D(nn.Module):
    def __init__(self, f_maps=[32, 64, 128, 256], in_channels=1, out_channels=13,
                 args=None, use_att=False, use_paf=None, use_uncert=None):
        super(ResidualUNet3D, self).__init__()
        if use_att:
            norm = BatchNorm3d
        else:
            norm = args.norm
        act = args.act

        self.use_aspp = args.use_aspp
        self.pif_sigmoid = args.pif_sigmoid
        self.use_tanh = args.use_tanh
        self.use_IP = args.use_IP
        self.out_channels = out_channels
        if self.out_channels > 1:
            self.use_softmax = args.use_softmax
        else:
            self.use_sigmoid = args.use_sigmoid
        self.use_coord = args.use_coord

        pool_layer = nn.AvgPool3d

        # create encoder path consisting of Encoder modules. Depth of the encoder is equal to `len(f_maps)`
        encoders = []
        for i, out_feature_num in enumerate(f_maps):
            if i == 0:
                encoder = Encoder(in_channels, out_feature_num, apply_pooling=False, use_IP=False,
                                  use_coord=self.use_coord,
                                  pool_layer=pool_layer, norm=norm, act=act, use_att=use_att)
            else:
                encoder = Encoder(f_maps[i - 1], out_feature_num, use_IP=self.use_IP, use_coord=self.use_coord,
                                  pool_layer=pool_layer, norm=norm, act=act, use_att=use_att)

            encoders.append(encoder)

        self.encoders = nn.ModuleList(encoders)

        # create decoder path consisting of the Decoder modules. The length of the decoder is equal to `len(f_maps) - 1`
        decoders = []
        reversed_f_maps = list(reversed(f_maps))
        for i in range(len(reversed_f_maps) - 1):
            in_feature_num = reversed_f_maps[i]
            out_feature_num = reversed_f_maps[i + 1]
            decoder = Decoder(in_feature_num, out_feature_num, use_coord=self.use_coord, norm=norm, act=act,
                              use_att=use_att)
            decoders.append(decoder)

        self.decoders = nn.ModuleList(decoders)

        # in the last layer a 1×1 convolution reduces the number of output
        # channels to the number of labels
        self.final_conv = nn.Conv3d(f_maps[0], out_channels, 1)

    def forward(self, x):
        encoders_features = []
        for idx, encoder in enumerate(self.encoders):
            x = encoder(x)
            encoders_features.insert(0, x)

        # remove last
        encoders_features = encoders_features[1:]

        for decoder, encoder_features in zip(self.decoders, encoders_features):
            x = decoder(encoder_features, x)

        out = self.final_conv(x)

        if self.out_channels > 1:
            if self.use_softmax:
                out = torch.softmax(out, dim=1)
            elif self.pif_sigmoid:
                out = torch.sigmoid(out)
            elif self.use_tanh:
                out = torch.tanh(out)
        else:
            if self.use_sigmoid:
                out = torch.sigmoid(out)
            elif self.use_tanh:
                out = torch.tanh(out)
        return out


class Encoder(nn.Module):
    def __init__(self, in_channels, out_channels, apply_pooling=True, use_IP=False, use_coord=False,
                 pool_layer=nn.MaxPool3d, norm='bn', act='relu', use_att=False,
                 use_lw=False, lw_kernel=3, input_channels=1):
        super(Encoder, self).__init__()
        if apply_pooling:
            self.pooling = pool_layer(kernel_size=2)
        else:
            self.pooling = None

        self.use_IP = use_IP
        self.use_coord = use_coord
        inplaces = in_channels + input_channels if self.use_IP else in_channels

        self.basic_module = ExtResNetBlock(inplaces, out_channels, norm=norm, act=act)

    def forward(self, x, scaled_img=None):
        if self.pooling is not None:
            x = self.pooling(x)
        if self.use_IP:
            x = torch.cat([x, scaled_img], dim=1)
        x = self.basic_module(x)
        return x


class Decoder(nn.Module):
    def __init__(self, in_channels, out_channels, scale_factor=(2, 2, 2), mode='nearest',
                 padding=1, use_coord=False, norm='bn', act='relu', use_att=False,
                 use_lw=False, lw_kernel=3):
        super(Decoder, self).__init__()
        self.use_coord = use_coord

        # if basic_module=ExtResNetBlock use transposed convolution upsampling and summation joining
        self.upsampling = Upsampling(transposed_conv=True, in_channels=in_channels, out_channels=out_channels,
                                     scale_factor=scale_factor, mode=mode)
        # sum joining
        self.joining = partial(self._joining, concat=False)
        # adapt the number of in_channels for the ExtResNetBlock
        in_channels = out_channels + 3 if self.use_coord else out_channels

        self.basic_module = ExtResNetBlock(in_channels, out_channels, norm='bn', act=act)

    def forward(self, encoder_features, x, ReturnInput=False):
        x = self.upsampling(encoder_features, x)
        x = self.joining(encoder_features, x)
        if ReturnInput:
            x1 = self.basic_module(x)
            return x1, x
        x = self.basic_module(x)
        return x

    @staticmethod
    def _joining(encoder_features, x, concat):
        if concat:
            return torch.cat((encoder_features, x), dim=1)
        else:
            return encoder_features + x


class ExtResNetBlock(nn.Module):
    def __init__(self, in_channels, out_channels, norm='bn', act='relu'):
        super(ExtResNetBlock, self).__init__()
        # first convolution
        self.conv1 = SingleConv(in_channels, out_channels, norm=norm, act=act)
        # residual block
        self.conv2 = SingleConv(out_channels, out_channels, norm=norm, act=act)
        # remove non-linearity from the 3rd convolution since it's going to be applied after adding the residual
        self.conv3 = SingleConv(out_channels, out_channels, norm=norm, act=act)
        self.non_linearity = nn.ELU(inplace=False)

    def forward(self, x):
        # apply first convolution and save the output as a residual
        out = self.conv1(x)
        residual = out
        # residual block
        out = self.conv2(out)
        out = self.conv3(out)

        out = out + residual
        out = self.non_linearity(out)
        return out


class SingleConv(nn.Sequential):
    def __init__(self, in_channels, out_channels, norm='bn', act='relu'):
        super(SingleConv, self).__init__()
        self.add_module('conv', nn.Conv3d(in_channels, out_channels, kernel_size=3, padding=1))
        self.add_module('batchnorm', normalization(out_channels, norm=norm))
        if act == 'relu':
            self.add_module('relu', nn.ReLU(inplace=False))
        elif act == 'lrelu':
            self.add_module('lrelu', nn.LeakyReLU(negative_slope=0.1, inplace=False))
        elif act == 'elu':
            self.add_module('elu', nn.ELU(inplace=False))


class Upsampling(nn.Module):
    def __init__(self, transposed_conv, in_channels=None, out_channels=None, scale_factor=(2, 2, 2), mode='nearest'):
        super(Upsampling, self).__init__()

        if transposed_conv:
            # make sure that the output size reverses the MaxPool3d from the corresponding encoder
            self.upsample = nn.ConvTranspose3d(in_channels, out_channels, kernel_size=3, stride=scale_factor, padding=1)
        else:
            self.upsample = partial(self._interpolate, mode=mode)

    def forward(self, encoder_features, x):
        output_size = encoder_features.size()[2:]
        return self.upsample(x, output_size)

    @staticmethod
    def _interpolate(x, size, mode):
        return F.interpolate(x, size=size, mode=mode)


# ---- model/model_loader.py ----
def get_model(args):

    if args.network == 'ResUNet':
        model = ResidualUNet3D(f_maps=args.f_maps, out_channels=args.num_classes,
                               args=args, in_channels=args.in_channels, use_att=args.use_att,
                               use_paf=args.use_paf, use_uncert=args.use_uncert)

    return model


# ---- utils/loss.py ----
def flatten(tensor):
    """Flattens a given tensor such that the channel axis is first.
    The shapes are transformed as follows:
       (N, C, D, H, W) -> (C, N * D * H * W)
    """
    # number of channels
    C = tensor.size(1)
    # new axis order
    axis_order = (1, 0) + tuple(range(2, tensor.dim()))
    # Transpose: (N, C, D, H, W) -> (C, N, D, H, W)
    transposed = tensor.permute(axis_order)
    # Flatten: (C, N, D, H, W) -> (C, N * D * H * W)
    return transposed.contiguous().view(C, -1)


# Dice loss
class DiceLoss(nn.Module):
    def __init__(self, smooth=1, args=None):
        super(DiceLoss, self).__init__()
        self.smooth = smooth
        self.use_softmax = args.use_softmax
        self.use_sigmoid = args.use_sigmoid

    def forward(self, outputs, targets):
        # flatten label and prediction tensors
        outputs = flatten(outputs)
        targets = flatten(targets)

        intersection = (outputs * targets).sum(-1)
        dice = (2. * intersection + self.smooth) / (outputs.sum(-1) + targets.sum(-1) + self.smooth)
        return 1 - dice.mean()


# ---- train.py (trimmed: no config files, validation or logging) ----
class UNetExperiment(pl.LightningModule):
    def __init__(self, args):
        if args.f_maps is None:
            args.f_maps = [32, 64, 128, 256]
        super(UNetExperiment, self).__init__()
        self.model = get_model(args)

        if args.loss_func_seg == 'Dice':
            self.loss_function_seg = DiceLoss(args=args)
        self.args = args

    def forward(self, x):
        return self.model(x)

    def training_step(self, train_batch, batch_idx):
        args = self.args
        img, label, index = train_batch
        img = img.to(torch.float32)
        seg_output = self.forward(img)
        loss_seg = self.loss_function_seg(seg_output, label)
        return loss_seg

    def configure_optimizers(self):
        args = self.args
        if args.optim == 'SGD':
            optimizer = torch.optim.SGD(self.parameters(),
                                        lr=args.learning_rate,
                                        momentum=0.9, weight_decay=0.001
                                        )
        elif args.optim == 'Adam':
            optimizer = torch.optim.Adam(self.parameters(),
                                         lr=args.learning_rate,
                                         betas=(0.9, 0.99)
                                         )
        return optimizer


if __name__ == '__main__':
    parser = argparse.ArgumentParser()
    parser.add_argument('--network', type=str, default='ResUNet')
    parser.add_argument('--f_maps', nargs='+', type=int, default=[4, 8])
    parser.add_argument('--in_channels', type=int, default=1)
    parser.add_argument('--num_classes', type=int, default=1)
    parser.add_argument('--use_IP', type=bool, default=False)
    parser.add_argument('--use_coord', type=bool, default=False)
    parser.add_argument('--use_softmax', type=bool, default=False)
    parser.add_argument('--use_sigmoid', type=bool, default=True)
    parser.add_argument('--use_tanh', type=bool, default=False)
    parser.add_argument('--use_aspp', type=bool, default=False)
    parser.add_argument('--use_att', type=bool, default=False)
    parser.add_argument('--use_paf', type=bool, default=False)
    parser.add_argument('--use_uncert', type=bool, default=False)
    parser.add_argument('--pif_sigmoid', type=bool, default=False)
    parser.add_argument('--norm', type=str, default='bn')
    parser.add_argument('--act', type=str, default='relu')
    parser.add_argument('--loss_func_seg', type=str, default='Dice')
    parser.add_argument('--optim', type=str, default='Adam')
    parser.add_argument('--learning_rate', type=float, default=1e-3)
    parser.add_argument('--batch_size', type=int, default=2)
    args = parser.parse_args([])

    # random (img, label, index) blocks instead of Dataset_ClsBased
    train_set = [(torch.randn(1, 8, 8, 8), (torch.rand(1, 8, 8, 8) > 0.9).float(), i) for i in range(4)]
    train_loader = DataLoader(train_set, batch_size=args.batch_size, shuffle=False)

    model = UNetExperiment(args)
    trainer = Trainer(max_epochs=1, accelerator='cpu', logger=False, enable_checkpointing=False,
                      enable_progress_bar=False, enable_model_summary=False)
    trainer.fit(model, train_loader)
