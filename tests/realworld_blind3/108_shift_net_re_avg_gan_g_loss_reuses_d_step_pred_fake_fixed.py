"""Shift-Net's ShiftNetModel with gan_type re_avg_gan, fixed: backward_G builds the relativistic generator loss from pred_fake, its own discriminator output for the (undetached) fake, instead of the self.pred_fake that backward_D already backwarded."""
# outcome: ok
# source: https://github.com/Zhaoyi-Yan/Shift-Net_pytorch/issues/34
# repo: Zhaoyi-Yan/Shift-Net_pytorch
# category: retention
# twin: 107_shift_net_re_avg_gan_g_loss_reuses_d_step_pred_fake.py
import argparse
import functools
from collections import OrderedDict

import torch
import torch.nn as nn
from torch.nn import functional as F
from torch.optim import lr_scheduler


# ---- models/modules/losses.py ----
class GANLoss(nn.Module):
    def __init__(self, gan_type='wgan_gp', target_real_label=1.0, target_fake_label=0.0):
        super(GANLoss, self).__init__()
        self.register_buffer('real_label', torch.tensor(target_real_label))
        self.register_buffer('fake_label', torch.tensor(target_fake_label))
        if gan_type == 'wgan_gp':
            self.loss = nn.MSELoss()
        elif gan_type == 'lsgan':
            self.loss = nn.MSELoss()
        elif gan_type == 'vanilla':
            self.loss = nn.BCELoss()
        #######################################################################
        ###  Relativistic GAN - https://github.com/AlexiaJM/RelativisticGAN ###
        #######################################################################
        elif gan_type == 're_s_gan':
            self.loss = nn.BCEWithLogitsLoss()
        elif gan_type == 're_avg_gan':
            self.loss = nn.BCEWithLogitsLoss()
        elif gan_type == 're_avg_hinGan':
            self.loss = nn.BCELoss()

        else:
            raise ValueError("GAN type [%s] not recognized." % gan_type)

    def get_target_tensor(self, input, target_is_real):
        if target_is_real:
            target_tensor = self.real_label
        else:
            target_tensor = self.fake_label
        return target_tensor.expand_as(input)

    def __call__(self, input, target_is_real):
        target_tensor = self.get_target_tensor(input, target_is_real)
        return self.loss(input, target_tensor)


# ---- models/networks.py (stand-ins: a small encoder-decoder for the shift U-Net, run with
# --skip so no shift layer is built, and the PatchGAN discriminator) ----
class TinyUnetG(nn.Module):
    def __init__(self, input_nc, output_nc, ngf):
        super(TinyUnetG, self).__init__()
        self.down = nn.Sequential(nn.Conv2d(input_nc, ngf, 4, 2, 1), nn.LeakyReLU(0.2, True),
                                  nn.Conv2d(ngf, ngf * 2, 4, 2, 1), nn.BatchNorm2d(ngf * 2))
        self.up = nn.Sequential(nn.ReLU(True), nn.ConvTranspose2d(ngf * 2, ngf, 4, 2, 1), nn.BatchNorm2d(ngf),
                                nn.ReLU(True), nn.ConvTranspose2d(ngf, output_nc, 4, 2, 1), nn.Tanh())

    def forward(self, x):
        return self.up(self.down(x))


class NLayerDiscriminator(nn.Module):
    def __init__(self, input_nc, ndf=64, n_layers=3, norm_layer=nn.BatchNorm2d, use_sigmoid=False):
        super(NLayerDiscriminator, self).__init__()
        kw = 4
        padw = 1
        sequence = [
            nn.Conv2d(input_nc, ndf, kernel_size=kw, stride=2, padding=padw),
            nn.LeakyReLU(0.2, True)
        ]

        nf_mult = 1
        for n in range(1, n_layers):
            nf_mult_prev = nf_mult
            nf_mult = min(2**n, 8)
            sequence += [
                nn.Conv2d(ndf * nf_mult_prev, ndf * nf_mult, kernel_size=kw, stride=2, padding=padw),
                norm_layer(ndf * nf_mult),
                nn.LeakyReLU(0.2, True)
            ]

        sequence += [nn.Conv2d(ndf * nf_mult, 1, kernel_size=kw, stride=1, padding=padw)]

        if use_sigmoid:
            sequence += [nn.Sigmoid()]

        self.model = nn.Sequential(*sequence)

    def forward(self, input):
        return self.model(input)


class networks:
    GANLoss = GANLoss

    @staticmethod
    def define_G(input_nc, output_nc, ngf, which_model_netG, opt, mask_global, norm='batch', use_dropout=False,
                 init_type='normal', gpu_ids=[], init_gain=0.02):
        return TinyUnetG(input_nc, output_nc, ngf), [], []

    @staticmethod
    def define_D(input_nc, ndf, which_model_netD, n_layers_D=3, norm='batch', use_sigmoid=False,
                 init_type='normal', gpu_ids=[], init_gain=0.02):
        return NLayerDiscriminator(input_nc, ndf, n_layers_D, nn.BatchNorm2d, use_sigmoid)

    @staticmethod
    def get_scheduler(optimizer, opt):
        return lr_scheduler.StepLR(optimizer, step_size=opt.lr_decay_iters, gamma=0.1)


# ---- models/shift_net/base_model.py (the parts used here) ----
class BaseModel():
    def name(self):
        return 'BaseModel'

    def initialize(self, opt):
        self.opt = opt
        self.gpu_ids = opt.gpu_ids
        self.isTrain = opt.isTrain
        self.device = torch.device('cpu')

    def print_networks(self, verbose):
        pass

    def get_current_losses(self):
        errors_ret = OrderedDict()
        for name in self.loss_names:
            errors_ret[name] = float(getattr(self, 'loss_' + name))
        return errors_ret


# ---- models/accelerated_shift_net/accelerated_shiftnet_model.py ----
class ShiftNetModel(BaseModel):
    def name(self):
        return 'ShiftNetModel'

    def initialize(self, opt):
        BaseModel.initialize(self, opt)
        self.opt = opt
        self.isTrain = opt.isTrain
        self.loss_names = ['G_GAN', 'G_L1', 'D']
        self.visual_names = ['real_A', 'fake_B', 'real_B']
        if self.isTrain:
            self.model_names = ['G', 'D']
        else:  # during test time, only load Gs
            self.model_names = ['G']

        # a bool mask (a ByteTensor one is refused by masked_fill_ in this torch)
        self.mask_global = torch.zeros(1, 1, \
                                 opt.fineSize, opt.fineSize, dtype=torch.bool)

        self.mask_global.zero_()
        self.mask_global[:, :, int(self.opt.fineSize/4) + self.opt.overlap : int(self.opt.fineSize/2) + int(self.opt.fineSize/4) - self.opt.overlap,\
                                int(self.opt.fineSize/4) + self.opt.overlap: int(self.opt.fineSize/2) + int(self.opt.fineSize/4) - self.opt.overlap] = 1

        self.mask_type = opt.mask_type
        self.gMask_opts = {}
        self.fixed_mask = opt.fixed_mask if opt.mask_type == 'center' else 0
        if opt.mask_type == 'center':
            assert opt.fixed_mask == 1, "Center mask must be fixed mask!"

        self.wgan_gp = False
        if opt.gan_type == 'wgan_gp':
            self.gp_lambda = opt.gp_lambda
            self.ncritic = opt.ncritic
            self.wgan_gp = True

        input_nc = opt.input_nc

        self.netG, self.ng_innerCos_list, self.ng_shift_list = networks.define_G(input_nc, opt.output_nc, opt.ngf,
                                      opt.which_model_netG, opt, self.mask_global, opt.norm, opt.use_dropout, opt.init_type, self.gpu_ids, opt.init_gain) # add opt, we need opt.shift_sz and other stuffs
        if self.isTrain:
            use_sigmoid = False
            if opt.gan_type == 'vanilla':
                use_sigmoid = True  # only vanilla GAN using BCECriterion
            self.netD = networks.define_D(opt.input_nc, opt.ndf,
                                          opt.which_model_netD,
                                          opt.n_layers_D, opt.norm, use_sigmoid, opt.init_type, self.gpu_ids, opt.init_gain)

        if self.isTrain:
            self.old_lr = opt.lr
            self.criterionGAN = networks.GANLoss(gan_type=opt.gan_type).to(self.device)
            self.criterionL1 = torch.nn.L1Loss()

            self.schedulers = []
            self.optimizers = []
            if self.wgan_gp:
                opt.beta1 = 0
                self.optimizer_G = torch.optim.Adam(self.netG.parameters(),
                                    lr=opt.lr, betas=(opt.beta1, 0.999))
                self.optimizer_D = torch.optim.Adam(self.netD.parameters(),
                                                    lr=opt.lr, betas=(opt.beta1, 0.999))
            else:
                self.optimizer_G = torch.optim.Adam(self.netG.parameters(),
                                                    lr=opt.lr, betas=(opt.beta1, 0.999))
                self.optimizer_D = torch.optim.Adam(self.netD.parameters(),
                                                    lr=opt.lr, betas=(opt.beta1, 0.999))
            self.optimizers.append(self.optimizer_G)
            self.optimizers.append(self.optimizer_D)
            for optimizer in self.optimizers:
                self.schedulers.append(networks.get_scheduler(optimizer, opt))

        self.print_networks(opt.verbose)

    def set_input(self, input):
        real_A = input['A'].to(self.device)
        real_B = input['B'].to(self.device)

        if self.fixed_mask:
            if self.opt.mask_type == 'center':
                self.mask_global.zero_()
                self.mask_global[:, :, int(self.opt.fineSize/4) + self.opt.overlap : int(self.opt.fineSize/2) + int(self.opt.fineSize/4) - self.opt.overlap,\
                                    int(self.opt.fineSize/4) + self.opt.overlap: int(self.opt.fineSize/2) + int(self.opt.fineSize/4) - self.opt.overlap] = 1
            else:
                raise ValueError("Mask_type [%s] not recognized." % self.opt.mask_type)

        self.set_latent_mask(self.mask_global, 3)

        real_A.narrow(1,0,1).masked_fill_(self.mask_global, 0.)#2*123.0/255.0 - 1.0
        real_A.narrow(1,1,1).masked_fill_(self.mask_global, 0.)#2*104.0/255.0 - 1.0
        real_A.narrow(1,2,1).masked_fill_(self.mask_global, 0.)#2*117.0/255.0 - 1.0

        self.real_A = real_A
        self.real_B = real_B
        self.image_paths = input['A_paths']

    def set_latent_mask(self, mask_global, layer_to_last):
        for ng_shift in self.ng_shift_list: # ITERATE OVER THE LIST OF ng_shift_list
            ng_shift.set_mask(mask_global, layer_to_last)

    def set_gt_latent(self):
        if not self.opt.skip:
            real_B = self.real_B
            self.netG(real_B) # input ground truth

    def forward(self):
        self.fake_B = self.netG(self.real_A)

    def backward_D(self):
        fake_AB = self.fake_B
        # Real
        real_AB = self.real_B # GroundTruth

        self.pred_fake = self.netD(fake_AB.detach())
        self.pred_real = self.netD(real_AB)

        if self.wgan_gp:
            self.loss_D_fake = torch.mean(self.pred_fake)
            self.loss_D_real = torch.mean(self.pred_real)

            # calculate gradient penalty
            alpha = torch.rand(real_AB.size()).to(self.device)
            x_hat = alpha * real_AB.detach() + (1 - alpha) * fake_AB.detach()
            x_hat.requires_grad_(True)
            pred_hat = self.netD(x_hat)

            gradients = torch.autograd.grad(outputs=pred_hat, inputs=x_hat, grad_outputs=torch.ones(pred_hat.size()).to(self.device),
                                create_graph=True, retain_graph=True, only_inputs=True)[0]

            gradient_penalty = self.gp_lambda * ((gradients.view(gradients.size(0), -1).norm(2, 1) - 1) ** 2).mean()

            self.loss_D = self.loss_D_fake - self.loss_D_real + gradient_penalty
        else:
            self.pred_fake = self.netD(fake_AB.detach())

            if self.opt.gan_type in ['vanilla', 'lsgan']:
                self.loss_D_fake = self.criterionGAN(self.pred_fake, False)
                self.loss_D_real = self.criterionGAN (self.pred_real, True)

                self.loss_D = (self.loss_D_fake + self.loss_D_real) * 0.5

            elif self.opt.gan_type == 're_s_gan':
                self.loss_D = self.criterionGAN (self.pred_real - self.pred_fake, True)

            elif self.opt.gan_type == 're_avg_gan':
                self.loss_D =  (self.criterionGAN (self.pred_real - torch.mean(self.pred_fake), True) \
                               + self.criterionGAN (self.pred_fake - torch.mean(self.pred_real), False)) / 2.

        self.loss_D.backward()

    def backward_G(self):
        # First, G(A) should fake the discriminator
        fake_AB = self.fake_B
        pred_fake = self.netD(fake_AB)

        if self.wgan_gp:
            self.loss_G_GAN = torch.mean(pred_fake)
        else:
            if self.opt.gan_type in ['vanilla', 'lsgan']:
                self.loss_G_GAN = self.criterionGAN(pred_fake, True)

            elif self.opt.gan_type == 're_s_gan':
                pred_real = self.netD (self.real_B)
                self.loss_G_GAN = self.criterionGAN (pred_fake - pred_real, True)

            elif self.opt.gan_type == 're_avg_gan':
                self.pred_real = self.netD(self.real_B)
                self.loss_G_GAN =  (self.criterionGAN (self.pred_real - torch.mean(pred_fake), False) \
                               + self.criterionGAN (pred_fake - torch.mean(self.pred_real), True)) / 2.


        self.loss_G_L1 = 0
        self.loss_G_L1 += self.criterionL1(self.fake_B, self.real_B) * self.opt.lambda_A

        if self.wgan_gp:
            self.loss_G = self.loss_G_L1 - self.loss_G_GAN * self.opt.gan_weight
        else:
            self.loss_G = self.loss_G_L1 + self.loss_G_GAN * self.opt.gan_weight


        # Third add additional netG contraint loss!
        self.ng_loss_value = 0
        if not self.opt.skip:
            for gl in self.ng_innerCos_list:
                self.ng_loss_value += gl.loss
            self.loss_G += self.ng_loss_value

        self.loss_G.backward()

    def optimize_parameters(self):
        self.forward()
        # for other type of GAN, ncritic = 1.
        if not self.wgan_gp:
            self.ncritic = 1
        for i in range(self.ncritic):
            self.optimizer_D.zero_grad()
            self.backward_D()
            self.optimizer_D.step()

        self.optimizer_G.zero_grad()
        self.backward_G()
        self.optimizer_G.step()


# ---- options (train_options.py defaults), shrunk; train.py's loop ----
def parse_opt():
    parser = argparse.ArgumentParser()
    parser.add_argument('--gan_type', type=str, default='vanilla')
    parser.add_argument('--gan_weight', type=float, default=0.2)
    parser.add_argument('--lambda_A', type=int, default=100)
    parser.add_argument('--fineSize', type=int, default=256)
    parser.add_argument('--overlap', type=int, default=4)
    parser.add_argument('--mask_type', type=str, default='center')
    parser.add_argument('--fixed_mask', type=int, default=1)
    parser.add_argument('--skip', type=int, default=0)
    parser.add_argument('--batchSize', type=int, default=1)
    parser.add_argument('--input_nc', type=int, default=3)
    parser.add_argument('--output_nc', type=int, default=3)
    parser.add_argument('--ngf', type=int, default=64)
    parser.add_argument('--ndf', type=int, default=64)
    parser.add_argument('--n_layers_D', type=int, default=3)
    parser.add_argument('--which_model_netG', type=str, default='acc_unet_shift_triple')
    parser.add_argument('--which_model_netD', type=str, default='basic')
    parser.add_argument('--norm', type=str, default='instance')
    parser.add_argument('--use_dropout', action='store_true')
    parser.add_argument('--init_type', type=str, default='normal')
    parser.add_argument('--init_gain', type=float, default=0.02)
    parser.add_argument('--lr', type=float, default=0.0002)
    parser.add_argument('--beta1', type=float, default=0.5)
    parser.add_argument('--lr_decay_iters', type=int, default=50)
    parser.add_argument('--verbose', action='store_true')
    return parser.parse_args(['--gan_type', 're_avg_gan', '--fineSize', '32', '--ngf', '8', '--ndf', '8',
                              '--batchSize', '2', '--skip', '1'])


if __name__ == '__main__':
    opt = parse_opt()
    opt.isTrain = True
    opt.gpu_ids = []
    model = ShiftNetModel()
    model.initialize(opt)
    for i in range(2):
        data = {'A': torch.rand(opt.batchSize, 3, opt.fineSize, opt.fineSize) * 2 - 1,
                'A_paths': ['img%d.png' % i]}
        data['B'] = data['A'].clone()
        model.set_input(data)
        model.set_gt_latent()
        model.optimize_parameters()
        print(model.get_current_losses())
