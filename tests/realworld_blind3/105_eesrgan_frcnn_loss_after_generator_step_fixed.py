"""EESRGAN's ESRGAN_EESN_FRCNN_Model.optimize_parameters, fixed: the detector is trained on final_SR detached, so its losses stop at the super-resolved images (their gradient into the generator was zeroed before optimizer_G used it anyway) and never reach the weights optimizer_G has stepped."""
# outcome: ok
# source: https://github.com/Jakaria08/EESRGAN/issues/9
# repo: Jakaria08/EESRGAN
# category: trainer
# twin: 104_eesrgan_frcnn_loss_after_generator_step.py
import functools
import logging
import math
from collections import OrderedDict

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.nn.init as init
from torch.nn.parallel import DataParallel

logger = logging.getLogger('base')


# ---- stand-in for kornia.laplacian (kornia not installed here) ----
class kornia:
    @staticmethod
    def laplacian(x, kernel_size):
        kernel = torch.ones(kernel_size, kernel_size, device=x.device)
        kernel[kernel_size // 2, kernel_size // 2] = 1 - kernel_size ** 2
        kernel = (kernel / kernel.abs().sum()).expand(x.size(1), 1, kernel_size, kernel_size)
        return F.conv2d(F.pad(x, [kernel_size // 2] * 4, mode='reflect'), kernel, groups=x.size(1))


# ---- utils/module_util.py ----
def initialize_weights(net_l, scale=1):
    if not isinstance(net_l, list):
        net_l = [net_l]
    for net in net_l:
        for m in net.modules():
            if isinstance(m, nn.Conv2d):
                init.kaiming_normal_(m.weight, a=0, mode='fan_in')
                m.weight.data *= scale  # for residual block
                if m.bias is not None:
                    m.bias.data.zero_()
            elif isinstance(m, nn.Linear):
                init.kaiming_normal_(m.weight, a=0, mode='fan_in')
                m.weight.data *= scale
                if m.bias is not None:
                    m.bias.data.zero_()
            elif isinstance(m, nn.BatchNorm2d):
                init.constant_(m.weight, 1)
                init.constant_(m.bias.data, 0.0)


def make_layer(block, n_layers):
    layers = []
    for _ in range(n_layers):
        layers.append(block())
    return nn.Sequential(*layers)


# ---- model/model.py (channel widths shrunk) ----
class ResidualDenseBlock_5C(nn.Module):
    def __init__(self, nf=64, gc=32, bias=True):
        super(ResidualDenseBlock_5C, self).__init__()
        # gc: growth channel, i.e. intermediate channels
        self.conv1 = nn.Conv2d(nf, gc, 3, 1, 1, bias=bias)
        self.conv2 = nn.Conv2d(nf + gc, gc, 3, 1, 1, bias=bias)
        self.conv3 = nn.Conv2d(nf + 2 * gc, gc, 3, 1, 1, bias=bias)
        self.conv4 = nn.Conv2d(nf + 3 * gc, gc, 3, 1, 1, bias=bias)
        self.conv5 = nn.Conv2d(nf + 4 * gc, nf, 3, 1, 1, bias=bias)
        self.lrelu = nn.LeakyReLU(negative_slope=0.2, inplace=True)

        # initialization
        initialize_weights([self.conv1, self.conv2, self.conv3, self.conv4, self.conv5], 0.1)

    def forward(self, x):
        x1 = self.lrelu(self.conv1(x))
        x2 = self.lrelu(self.conv2(torch.cat((x, x1), 1)))
        x3 = self.lrelu(self.conv3(torch.cat((x, x1, x2), 1)))
        x4 = self.lrelu(self.conv4(torch.cat((x, x1, x2, x3), 1)))
        x5 = self.conv5(torch.cat((x, x1, x2, x3, x4), 1))
        return x5 * 0.2 + x


class RRDB(nn.Module):
    '''Residual in Residual Dense Block'''

    def __init__(self, nf, gc=32):
        super(RRDB, self).__init__()
        self.RDB1 = ResidualDenseBlock_5C(nf, gc)
        self.RDB2 = ResidualDenseBlock_5C(nf, gc)
        self.RDB3 = ResidualDenseBlock_5C(nf, gc)

    def forward(self, x):
        out = self.RDB1(x)
        out = self.RDB2(out)
        out = self.RDB3(out)
        return out * 0.2 + x


class RRDBNet(nn.Module):
    def __init__(self, in_nc, out_nc, nf, nb, gc=32):
        super(RRDBNet, self).__init__()
        RRDB_block_f = functools.partial(RRDB, nf=nf, gc=gc)

        self.conv_first = nn.Conv2d(in_nc, nf, 3, 1, 1, bias=True)
        self.RRDB_trunk = make_layer(RRDB_block_f, nb)
        self.trunk_conv = nn.Conv2d(nf, nf, 3, 1, 1, bias=True)
        #### upsampling
        self.upconv1 = nn.Conv2d(nf, nf, 3, 1, 1, bias=True)
        self.upconv2 = nn.Conv2d(nf, nf, 3, 1, 1, bias=True)
        self.HRconv = nn.Conv2d(nf, nf, 3, 1, 1, bias=True)
        self.conv_last = nn.Conv2d(nf, out_nc, 3, 1, 1, bias=True)

        self.lrelu = nn.LeakyReLU(negative_slope=0.2, inplace=True)

    def forward(self, x):
        fea = self.conv_first(x)
        trunk = self.trunk_conv(self.RRDB_trunk(fea))
        fea = fea + trunk

        fea = self.lrelu(self.upconv1(F.interpolate(fea, scale_factor=2, mode='nearest')))
        fea = self.lrelu(self.upconv2(F.interpolate(fea, scale_factor=2, mode='nearest')))
        out = self.conv_last(self.lrelu(self.HRconv(fea)))

        return out


class Discriminator_VGG_128(nn.Module):
    def __init__(self, in_nc, nf):
        super(Discriminator_VGG_128, self).__init__()
        self.conv0_0 = nn.Conv2d(in_nc, nf, 3, 1, 1, bias=True)
        self.conv0_1 = nn.Conv2d(nf, nf, 4, 2, 1, bias=False)
        self.bn0_1 = nn.BatchNorm2d(nf, affine=True)
        self.conv1_0 = nn.Conv2d(nf, nf * 2, 3, 1, 1, bias=False)
        self.bn1_0 = nn.BatchNorm2d(nf * 2, affine=True)
        self.conv1_1 = nn.Conv2d(nf * 2, nf * 2, 4, 2, 1, bias=False)
        self.bn1_1 = nn.BatchNorm2d(nf * 2, affine=True)
        self.conv2_0 = nn.Conv2d(nf * 2, nf * 4, 3, 1, 1, bias=False)
        self.bn2_0 = nn.BatchNorm2d(nf * 4, affine=True)
        self.conv2_1 = nn.Conv2d(nf * 4, nf * 4, 4, 2, 1, bias=False)
        self.bn2_1 = nn.BatchNorm2d(nf * 4, affine=True)
        self.conv3_0 = nn.Conv2d(nf * 4, nf * 8, 3, 1, 1, bias=False)
        self.bn3_0 = nn.BatchNorm2d(nf * 8, affine=True)
        self.conv3_1 = nn.Conv2d(nf * 8, nf * 8, 4, 2, 1, bias=False)
        self.bn3_1 = nn.BatchNorm2d(nf * 8, affine=True)
        self.conv4_0 = nn.Conv2d(nf * 8, nf * 8, 3, 1, 1, bias=False)
        self.bn4_0 = nn.BatchNorm2d(nf * 8, affine=True)
        self.conv4_1 = nn.Conv2d(nf * 8, nf * 8, 4, 2, 1, bias=False)
        self.bn4_1 = nn.BatchNorm2d(nf * 8, affine=True)

        self.linear1 = nn.Linear(nf * 8 * 1 * 1, 100)  # 2048 * 4 * 4 for the 256x256 patches
        self.linear2 = nn.Linear(100, 1)

        # activation function
        self.lrelu = nn.LeakyReLU(negative_slope=0.2, inplace=True)

    def forward(self, x):
        fea = self.lrelu(self.conv0_0(x))
        fea = self.lrelu(self.bn0_1(self.conv0_1(fea)))

        fea = self.lrelu(self.bn1_0(self.conv1_0(fea)))
        fea = self.lrelu(self.bn1_1(self.conv1_1(fea)))

        fea = self.lrelu(self.bn2_0(self.conv2_0(fea)))
        fea = self.lrelu(self.bn2_1(self.conv2_1(fea)))

        fea = self.lrelu(self.bn3_0(self.conv3_0(fea)))
        fea = self.lrelu(self.bn3_1(self.conv3_1(fea)))

        fea = self.lrelu(self.bn4_0(self.conv4_0(fea)))
        fea = self.lrelu(self.bn4_1(self.conv4_1(fea)))

        fea = fea.view(fea.size(0), -1)
        fea = self.lrelu(self.linear1(fea))
        out = self.linear2(fea)
        return out


class VGGFeatureExtractor(nn.Module):
    """stand-in features (torchvision's pretrained vgg19 is not available here)"""
    def __init__(self, feature_layer=34, use_bn=False, use_input_norm=False,
                 device=torch.device('cpu')):
        super(VGGFeatureExtractor, self).__init__()
        self.use_input_norm = use_input_norm
        if self.use_input_norm:
            mean = torch.Tensor([0.3442, 0.3708, 0.3476]).view(1, 3, 1, 1).to(device)# for cowc dataset
            std = torch.Tensor([0.1232, 0.1230, 0.1284]).view(1, 3, 1, 1).to(device)# for cowc dataset
            self.register_buffer('mean', mean)
            self.register_buffer('std', std)
        self.features = nn.Sequential(nn.Conv2d(3, 8, 3, 1, 1), nn.ReLU(True), nn.Conv2d(8, 8, 3, 1, 1))
        # No need to BP to variable
        for k, v in self.features.named_parameters():
            v.requires_grad = False

    def forward(self, x):
        if self.use_input_norm:
            x = (x - self.mean) / self.std
        output = self.features(x)
        return output


class BeginEdgeConv(nn.Module):
    def __init__(self):
        super(BeginEdgeConv, self).__init__()

        self.conv_layer1 = nn.Conv2d(3, 8, 3, 1, 1, bias=True)
        self.conv_layer2 = nn.Conv2d(8, 8, 3, 1, 1, bias=True)
        self.conv_layer3 = nn.Conv2d(8, 16, 3, 2, 1, bias=True)
        self.conv_layer4 = nn.Conv2d(16, 16, 3, 1, 1, bias=True)
        self.conv_layer5 = nn.Conv2d(16, 32, 3, 2, 1, bias=True)
        self.conv_layer6 = nn.Conv2d(32, 8, 3, 1, 1, bias=True)
        self.lrelu = nn.LeakyReLU(negative_slope=0.2, inplace=True)

        # initialization
        initialize_weights([self.conv_layer1, self.conv_layer2, self.conv_layer3,
                            self.conv_layer4, self.conv_layer5, self.conv_layer6], 0.1)

    def forward(self, x):
      x = self.lrelu(self.conv_layer1(x))
      x = self.lrelu(self.conv_layer2(x))
      x = self.lrelu(self.conv_layer3(x))
      x = self.lrelu(self.conv_layer4(x))
      x = self.lrelu(self.conv_layer5(x))
      x = self.lrelu(self.conv_layer6(x))

      return x


class EESNRRDBNet(nn.Module):
    def __init__(self, in_nc, out_nc, nf, nb, gc=32):
        super(EESNRRDBNet, self).__init__()
        RRDB_block_f = functools.partial(RRDB, nf=nf, gc=gc)

        self.conv_first = nn.Conv2d(in_nc, nf, 3, 1, 1, bias=True)
        self.RRDB_trunk = make_layer(RRDB_block_f, nb)
        self.trunk_conv = nn.Conv2d(nf, nf, 3, 1, 1, bias=True)
        #### upsampling
        self.upconv1 = nn.Conv2d(nf, nf, 3, 1, 1, bias=True)
        self.upconv2 = nn.Conv2d(nf, nf, 3, 1, 1, bias=True)
        self.HRconv = nn.Conv2d(nf, nf, 3, 1, 1, bias=True)
        self.conv_last = nn.Conv2d(nf, out_nc, 3, 1, 1, bias=True)

        self.lrelu = nn.LeakyReLU(negative_slope=0.2, inplace=True)

    def forward(self, x):
        fea = self.conv_first(x)
        trunk = self.trunk_conv(self.RRDB_trunk(fea))
        fea = fea + trunk

        out = self.lrelu(self.conv_last(self.lrelu(self.HRconv(fea))))

        return out


class MaskConv(nn.Module):
    def __init__(self):
        super(MaskConv, self).__init__()

        self.conv_layer1 = nn.Conv2d(8, 8, 3, 1, 1, bias=True)
        self.conv_layer2 = nn.Conv2d(8, 16, 3, 1, 1, bias=True)
        self.conv_layer3 = nn.Conv2d(16, 32, 3, 1, 1, bias=True)
        self.lrelu = nn.LeakyReLU(negative_slope=0.2, inplace=True)

        # initialization
        initialize_weights([self.conv_layer1, self.conv_layer2, self.conv_layer3], 0.1)

    def forward(self, x):
      x = self.lrelu(self.conv_layer1(x))
      x = self.lrelu(self.conv_layer2(x))
      x = self.lrelu(self.conv_layer3(x))
      x = torch.sigmoid(x)

      return x


class FinalConv(nn.Module):
    def __init__(self):
        super(FinalConv, self).__init__()

        self.upconv1 = nn.Conv2d(32, 16, 3, 1, 1, bias=True)
        self.upconv2 = nn.Conv2d(16, 16, 3, 1, 1, bias=True)
        self.HRconv = nn.Conv2d(16, 8, 3, 1, 1, bias=True)
        self.conv_last = nn.Conv2d(8, 3, 3, 1, 1, bias=True)
        self.lrelu = nn.LeakyReLU(negative_slope=0.2, inplace=True)

    def forward(self, x):
        x = self.lrelu(self.upconv1(F.interpolate(x, scale_factor=2, mode='nearest')))
        x = self.lrelu(self.upconv2(F.interpolate(x, scale_factor=2, mode='nearest')))
        x = self.conv_last(self.lrelu(self.HRconv(x)))

        return x


class EESN(nn.Module):
  def __init__(self):
    super(EESN, self).__init__()
    self.beginEdgeConv = BeginEdgeConv()
    self.denseNet = EESNRRDBNet(8, 32, 8, 1, gc=8)
    self.maskConv = MaskConv()
    self.finalConv = FinalConv()

  def forward(self, x):
    x_lap = kornia.laplacian(x, 3) # see kornia laplacian kernel
    x1 = self.beginEdgeConv(x_lap)
    x2 = self.denseNet(x1)
    x3 = self.maskConv(x1)
    x4 = x3*x2 + x2
    x_learned_lap = self.finalConv(x4)

    return x_learned_lap, x_lap


class ESRGAN_EESN(nn.Module):
  def __init__(self, in_nc, out_nc, nf, nb):
    super(ESRGAN_EESN, self).__init__()
    self.netRG = RRDBNet(in_nc, out_nc, nf, nb, gc=8)
    self.netE = EESN()

  def forward(self, x):
    x_base = self.netRG(x) # add bicubic according to the implementation by author but not stated in the paper
    x5, x_lap = self.netE(x_base) # EESN net
    x_sr = x5 + x_base - x_lap

    return x_base, x_sr, x5, x_lap


# ---- model/loss.py ----
class CharbonnierLoss(nn.Module):
    """Charbonnier Loss (L1)"""

    def __init__(self, eps=1e-6):
        super(CharbonnierLoss, self).__init__()
        self.eps = eps

    def forward(self, x, y):
        diff = x - y
        loss = torch.mean(torch.sqrt(diff * diff + self.eps))
        return loss


class GANLoss(nn.Module):
    def __init__(self, gan_type, real_label_val=1.0, fake_label_val=0.0):
        super(GANLoss, self).__init__()
        self.gan_type = gan_type.lower()
        self.real_label_val = real_label_val
        self.fake_label_val = fake_label_val

        if self.gan_type == 'gan' or self.gan_type == 'ragan':
            self.loss = nn.BCEWithLogitsLoss()
        elif self.gan_type == 'lsgan':
            self.loss = nn.MSELoss()
        else:
            raise NotImplementedError('GAN type [{:s}] is not found'.format(self.gan_type))

    def get_target_label(self, input, target_is_real):
        if target_is_real:
            return torch.empty_like(input).fill_(self.real_label_val)
        else:
            return torch.empty_like(input).fill_(self.fake_label_val)

    def forward(self, input, target_is_real):
        target_label = self.get_target_label(input, target_is_real)
        loss = self.loss(input, target_label)
        return loss


# ---- stand-in for torchvision's fasterrcnn_resnet50_fpn (not installed here): a tiny
# detector that, in train mode, takes a list of images and targets and returns its losses ----
class TinyFRCNN(nn.Module):
    def __init__(self, num_classes=2):
        super(TinyFRCNN, self).__init__()
        self.backbone = nn.Sequential(nn.Conv2d(3, 8, 3, 2, 1), nn.ReLU(), nn.AdaptiveAvgPool2d(1))
        self.cls_score = nn.Linear(8, num_classes)
        self.bbox_pred = nn.Linear(8, 4)

    def forward(self, images, targets=None):
        feats = self.backbone(torch.stack(images)).flatten(1)
        labels = torch.stack([t['labels'][0] for t in targets])
        boxes = torch.stack([t['boxes'][0] for t in targets]) / images[0].shape[-1]
        return {'loss_classifier': F.cross_entropy(self.cls_score(feats), labels),
                'loss_box_reg': F.smooth_l1_loss(self.bbox_pred(feats), boxes)}


def reduce_dict(input_dict, average=True):
    return input_dict  # detection/utils.py: a single process has nothing to reduce


# ---- model/gan_base_model.py (the part used here) ----
class BaseModel():
    def __init__(self, config, device):
        self.config = config
        self.device = device
        self.schedulers = []
        self.optimizers = []

    def update_learning_rate(self, cur_iter, warmup_iter=-1):
        for scheduler in self.schedulers:
            scheduler.step()


# ---- model/ESRGAN_EESN_FRCNN_Model.py ----
class ESRGAN_EESN_FRCNN_Model(BaseModel):
    def __init__(self, config, device):
        super(ESRGAN_EESN_FRCNN_Model, self).__init__(config, device)
        self.configG = config['network_G']
        self.configD = config['network_D']
        self.configT = config['train']
        self.configO = config['optimizer']['args']
        self.configS = config['lr_scheduler']
        self.config = config
        self.device = device
        #Generator
        self.netG = ESRGAN_EESN(in_nc=self.configG['in_nc'], out_nc=self.configG['out_nc'],
                                    nf=self.configG['nf'], nb=self.configG['nb'])
        self.netG = self.netG.to(self.device)
        self.netG = DataParallel(self.netG)

        #descriminator
        self.netD = Discriminator_VGG_128(in_nc=self.configD['in_nc'], nf=self.configD['nf'])
        self.netD = self.netD.to(self.device)
        self.netD = DataParallel(self.netD)

        #FRCNN_model
        self.netFRCNN = TinyFRCNN(num_classes=2)
        self.netFRCNN.to(self.device)

        self.netG.train()
        self.netD.train()
        self.netFRCNN.train()
        # G CharbonnierLoss for final output SR and GT HR
        self.cri_charbonnier = CharbonnierLoss().to(device)
        # G pixel loss
        if self.configT['pixel_weight'] > 0.0:
            l_pix_type = self.configT['pixel_criterion']
            if l_pix_type == 'l1':
                self.cri_pix = nn.L1Loss().to(self.device)
            elif l_pix_type == 'l2':
                self.cri_pix = nn.MSELoss().to(self.device)
            else:
                raise NotImplementedError('Loss type [{:s}] not recognized.'.format(l_pix_type))
            self.l_pix_w = self.configT['pixel_weight']
        else:
            self.cri_pix = None

        # G feature loss
        if self.configT['feature_weight'] > 0:
            l_fea_type = self.configT['feature_criterion']
            if l_fea_type == 'l1':
                self.cri_fea = nn.L1Loss().to(self.device)
            elif l_fea_type == 'l2':
                self.cri_fea = nn.MSELoss().to(self.device)
            else:
                raise NotImplementedError('Loss type [{:s}] not recognized.'.format(l_fea_type))
            self.l_fea_w = self.configT['feature_weight']
        else:
            self.cri_fea = None
        if self.cri_fea:  # load VGG perceptual loss
            self.netF = VGGFeatureExtractor(feature_layer=34,
                                          use_input_norm=True, device=self.device)
            self.netF = self.netF.to(self.device)
            self.netF = DataParallel(self.netF)
            self.netF.eval()

        # GD gan loss
        self.cri_gan = GANLoss(self.configT['gan_type'], 1.0, 0.0).to(self.device)
        self.l_gan_w = self.configT['gan_weight']
        # D_update_ratio and D_init_iters
        self.D_update_ratio = self.configT['D_update_ratio'] if self.configT['D_update_ratio'] else 1
        self.D_init_iters = self.configT['D_init_iters'] if self.configT['D_init_iters'] else 0


        # optimizers
        # G
        wd_G = self.configO['weight_decay_G'] if self.configO['weight_decay_G'] else 0
        optim_params = []
        for k, v in self.netG.named_parameters():  # can optimize for a part of the model
            if v.requires_grad:
                optim_params.append(v)

        self.optimizer_G = torch.optim.Adam(optim_params, lr=self.configO['lr_G'],
                                            weight_decay=wd_G,
                                            betas=(self.configO['beta1_G'], self.configO['beta2_G']))
        self.optimizers.append(self.optimizer_G)

        # D
        wd_D = self.configO['weight_decay_D'] if self.configO['weight_decay_D'] else 0
        self.optimizer_D = torch.optim.Adam(self.netD.parameters(), lr=self.configO['lr_D'],
                                            weight_decay=wd_D,
                                            betas=(self.configO['beta1_D'], self.configO['beta2_D']))
        self.optimizers.append(self.optimizer_D)

        # FRCNN -- use weigt decay
        FRCNN_params = [p for p in self.netFRCNN.parameters() if p.requires_grad]
        self.optimizer_FRCNN = torch.optim.SGD(FRCNN_params, lr=0.005,
                                               momentum=0.9, weight_decay=0.0005)
        self.optimizers.append(self.optimizer_FRCNN)

        # schedulers
        if self.configS['type'] == 'MultiStepLR':
            for optimizer in self.optimizers:
                self.schedulers.append(
                    torch.optim.lr_scheduler.MultiStepLR(optimizer, self.configS['args']['lr_steps'],
                                                         gamma=self.configS['args']['lr_gamma']))
        else:
            raise NotImplementedError('MultiStepLR learning rate scheme is enough.')
        self.log_dict = OrderedDict()

    def feed_data(self, image, targets):
        self.var_L = image['image_lq'].to(self.device)
        self.var_H = image['image'].to(self.device)
        input_ref = image['ref'] if 'ref' in image else image['image']
        self.var_ref = input_ref.to(self.device)
        self.targets = [{k: v.to(self.device) for k, v in t.items()} for t in targets]


    def optimize_parameters(self, step):
        #Generator
        for p in self.netG.parameters():
            p.requires_grad = True
        for p in self.netD.parameters():
            p.requires_grad = False
        self.optimizer_G.zero_grad()
        self.fake_H, self.final_SR, self.x_learned_lap_fake, _ = self.netG(self.var_L)

        l_g_total = 0
        if step % self.D_update_ratio == 0 and step > self.D_init_iters:
            if self.cri_pix: #pixel loss
                l_g_pix = self.l_pix_w * self.cri_pix(self.fake_H, self.var_H)
                l_g_total += l_g_pix
            if self.cri_fea: # feature loss
                real_fea = self.netF(self.var_H).detach() #don't want to backpropagate this, need proper explanation
                fake_fea = self.netF(self.fake_H) #In netF normalize=False, check it
                l_g_fea = self.l_fea_w * self.cri_fea(fake_fea, real_fea)
                l_g_total += l_g_fea

            pred_g_fake = self.netD(self.fake_H)
            if self.configT['gan_type'] == 'gan':
                l_g_gan = self.l_gan_w * self.cri_gan(pred_g_fake, True)
            elif self.configT['gan_type'] == 'ragan':
                pred_d_real = self.netD(self.var_ref).detach()
                l_g_gan = self.l_gan_w * (
                self.cri_gan(pred_d_real - torch.mean(pred_g_fake), False) +
                self.cri_gan(pred_g_fake - torch.mean(pred_d_real), True)) / 2
            l_g_total += l_g_gan
            #EESN calculate loss
            self.lap_HR = kornia.laplacian(self.var_H, 3)
            if self.cri_charbonnier: # charbonnier pixel loss HR and SR
                l_e_charbonnier = 5 * (self.cri_charbonnier(self.final_SR, self.var_H)
                                        + self.cri_charbonnier(self.x_learned_lap_fake, self.lap_HR))#change the weight to empirically
            l_g_total += l_e_charbonnier

            l_g_total.backward(retain_graph=True)
            self.optimizer_G.step()

        #descriminator
        for p in self.netD.parameters():
            p.requires_grad = True

        self.optimizer_D.zero_grad()
        l_d_total = 0
        pred_d_real = self.netD(self.var_ref)
        pred_d_fake = self.netD(self.fake_H.detach()) #to avoid BP to Generator
        if self.configT['gan_type'] == 'gan':
            l_d_real = self.cri_gan(pred_d_real, True)
            l_d_fake = self.cri_gan(pred_d_fake, False)
            l_d_total = l_d_real + l_d_fake
        elif self.configT['gan_type'] == 'ragan':
            l_d_real = self.cri_gan(pred_d_real - torch.mean(pred_d_fake), True)
            l_d_fake = self.cri_gan(pred_d_fake - torch.mean(pred_d_real), False)
            l_d_total = (l_d_real + l_d_fake) / 2 # thinking of adding final sr d loss

        l_d_total.backward()
        self.optimizer_D.step()

        for p in self.netD.parameters():
            p.requires_grad = False
        #Run FRCNN
        self.optimizer_FRCNN.zero_grad()
        self.intermediate_img = self.final_SR.detach()
        img_count = self.intermediate_img.size()[0]
        self.intermediate_img = [self.intermediate_img[i] for i in range(img_count)]
        loss_dict = self.netFRCNN(self.intermediate_img, self.targets)
        losses = sum(loss for loss in loss_dict.values())

        # reduce losses over all GPUs for logging purposes
        loss_dict_reduced = reduce_dict(loss_dict)
        losses_reduced = sum(loss for loss in loss_dict_reduced.values())

        loss_value = losses_reduced.item()

        losses.backward()
        self.optimizer_FRCNN.step()

        # set log
        if step % self.D_update_ratio == 0 and step > self.D_init_iters:
            if self.cri_pix:
                self.log_dict['l_g_pix'] = l_g_pix.item()
            if self.cri_fea:
                self.log_dict['l_g_fea'] = l_g_fea.item()
            self.log_dict['l_g_gan'] = l_g_gan.item()
            self.log_dict['l_e_charbonnier'] = l_e_charbonnier.item()

        self.log_dict['l_d_real'] = l_d_real.item()
        self.log_dict['l_d_fake'] = l_d_fake.item()
        self.log_dict['D_real'] = torch.mean(pred_d_real.detach())
        self.log_dict['D_fake'] = torch.mean(pred_d_fake.detach())
        self.log_dict['FRCNN_loss'] = loss_value

    def get_current_log(self):
        return self.log_dict


# ---- trainer/cowc_GAN_FRCNN_trainer.py (the training loop) ----
class COWCGANFrcnnTrainer:
    def __init__(self, config, data_loader, valid_data_loader=None):
        self.config = config
        self.data_loader = data_loader
        self.valid_data_loader = valid_data_loader
        self.device = torch.device('cpu')
        self.train_size = int(math.ceil(len(self.data_loader) / 1))
        self.total_iters = int(config['train']['niter'])
        self.total_epochs = int(math.ceil(self.total_iters / self.train_size))
        self.model = ESRGAN_EESN_FRCNN_Model(config, self.device)

    def train(self):
        current_step = 0
        start_epoch = 0
        for epoch in range(start_epoch, self.total_epochs + 1):
            for _, (image, targets) in enumerate(self.data_loader):
                current_step += 1
                if current_step > self.total_iters:
                    break
                #### update learning rate
                self.model.update_learning_rate(current_step, warmup_iter=self.config['train']['warmup_iter'])

                #### training
                self.model.feed_data(image, targets)
                self.model.optimize_parameters(current_step)

                #### log
                if current_step % self.config['logger']['print_freq'] == 0:
                    logs = self.model.get_current_log()
                    message = '<epoch:{:3d}, iter:{:8,d}> '.format(epoch, current_step)
                    for k, v in logs.items():
                        message += '{:s}: {:.4e} '.format(k, v)
                    print(message)


# ---- config_GAN.json, shrunk (nf, nb, patch size, niter) ----
config = {
    "name": "RRDB_ESRGANx4",
    "network_G": {"which_model_G": "RRDBNet", "in_nc": 3, "out_nc": 3, "nf": 8, "nb": 1, "args": {}},
    "network_D": {"which_model_G": "discriminator_vgg_128", "in_nc": 3, "nf": 4, "args": {}},
    "optimizer": {"type": "SGD", "args": {
        "lr_G": 0.0001, "weight_decay_G": 0, "beta1_G": 0.9, "beta2_G": 0.99,
        "lr_D": 0.0001, "weight_decay_D": 0, "beta1_D": 0.9, "beta2_D": 0.99}},
    "lr_scheduler": {"type": "MultiStepLR", "args": {"lr_steps": [50000, 100000, 200000, 300000], "lr_gamma": 0.5}},
    "train": {
        "niter": 2, "warmup_iter": -1, "pixel_criterion": "l1", "pixel_weight": 0.01,
        "feature_criterion": "l1", "feature_weight": 1, "gan_type": "ragan", "gan_weight": 0.001,
        "D_update_ratio": 1, "D_init_iters": 0, "manual_seed": 10, "val_freq": 1000},
    "logger": {"print_freq": 1},
}


def fake_cowc_loader(n_batches=2, batch_size=2, size=32):
    """COWCGANFrcnnDataLoader stand-in: LR/HR patch pairs (x4) with one car box each"""
    batches = []
    for _ in range(n_batches):
        image = {'image_lq': torch.rand(batch_size, 3, size // 4, size // 4),
                 'image': torch.rand(batch_size, 3, size, size)}
        targets = [{'boxes': torch.tensor([[4.0, 4.0, 12.0, 12.0]]), 'labels': torch.tensor([1])}
                   for _ in range(batch_size)]
        batches.append((image, targets))
    return batches


if __name__ == '__main__':
    trainer = COWCGANFrcnnTrainer(config=config, data_loader=fake_cowc_loader(),
                                  valid_data_loader=None)
    trainer.train()
