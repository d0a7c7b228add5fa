"""simple_CycleGAN (cy-xu) simple_cygan.py: each iteration steps optimizer_g for both cycles, then trains netD_x/netD_y on the non-detached fake_y/fake_x, so loss_D_x.backward() runs back into the generators whose weights were just updated."""
# outcome: inplace-error
# source: https://github.com/cy-xu/simple_CycleGAN/issues/3
# repo: cy-xu/simple_CycleGAN
# category: trainer
# twin: b057_simple_cyclegan_d_backward_through_stepped_generators_fixed.py
import time
import itertools
import numpy as np
import torch as t
import torch.nn as nn
from torch.nn import init
import functools


# ---- model.py ----
class ResnetGenerator(nn.Module):
    def __init__(self, opt):
        # input_nc, output_nc, ngf=64, use_dropout=False, n_blocks=6, padding_type='reflect'):
        """ Construct a Resnet-based generator, adopt from CycleGan """

        input_nc = opt.input_nc
        output_nc = opt.output_nc
        n_blocks = opt.n_blocks
        ngf = opt.ngf
        use_dropout = opt.use_dropout

        assert (n_blocks > 0)

        super(ResnetGenerator, self).__init__()

        model = [nn.ReflectionPad2d(padding=3),
                 nn.Conv2d(in_channels=input_nc,
                           out_channels=ngf,
                           kernel_size=7,
                           padding=0,
                           bias=True),
                 nn.InstanceNorm2d(num_features=ngf),
                 nn.ReLU(inplace=True)]

        """ add 2 downsampling layers """
        n_downsampling = 2
        for i in range(n_downsampling):
            mult = 2 ** i
            model += [nn.Conv2d(in_channels=ngf * mult,
                                out_channels=ngf * mult * 2,
                                kernel_size=3,
                                stride=2,
                                padding=1,
                                bias=True),
                      nn.InstanceNorm2d(num_features=ngf * mult * 2),
                      nn.ReLU(inplace=True)]

        """ add n ResNet blocks """
        mult = 2 ** n_downsampling
        for i in range(n_blocks):
            model += [ResnetBlock(dim=ngf * mult, use_dropout=use_dropout)]

        """ add 2 upsampling layers """
        for i in range(n_downsampling):
            mult = 2 ** (n_downsampling - i)
            model += [nn.ConvTranspose2d(in_channels=ngf * mult,
                                         out_channels=int(ngf * mult / 2),
                                         kernel_size=3,
                                         stride=2,
                                         padding=1,
                                         output_padding=1,
                                         bias=True),
                      nn.InstanceNorm2d(num_features=int(ngf * mult / 2)),
                      nn.ReLU(inplace=True)]

        model += [nn.ReflectionPad2d(3)]
        model += [nn.Conv2d(ngf, output_nc, kernel_size=7, padding=0)]
        model += [nn.Tanh()]

        self.model = nn.Sequential(*model)

    def forward(self, input):
        """ standard forward """
        return self.model(input)  # saved-by


class ResnetBlock(nn.Module):
    def __init__(self, dim, use_dropout):
        super(ResnetBlock, self).__init__()
        self.conv_block = self.build_conv_block(dim, use_dropout)

    def build_conv_block(self, dim, use_dropout):

        conv_block = [nn.ReflectionPad2d(padding=1)]
        conv_block += [nn.Conv2d(in_channels=dim,
                                 out_channels=dim,
                                 kernel_size=3,
                                 padding=0,
                                 bias=True),
                       nn.InstanceNorm2d(num_features=dim),
                       nn.ReLU(inplace=True)]

        if use_dropout:
            conv_block += [nn.Dropout(p=0.5)]

        conv_block += [nn.ReflectionPad2d(padding=1)]
        conv_block += [nn.Conv2d(in_channels=dim,
                                 out_channels=dim,
                                 kernel_size=3,
                                 padding=0,
                                 bias=True),
                       nn.InstanceNorm2d(num_features=dim)]

        return nn.Sequential(*conv_block)

    def forward(self, input):
        """ add skip connections """
        out = input + self.conv_block(input)
        return out


class NLayerDiscriminator(nn.Module):
    """ defines a PatchGAN discriminator, adopt from CycleGAN """

    def __init__(self, opt):
        super(NLayerDiscriminator, self).__init__()
        use_bias = True

        input_nc = opt.input_nc
        ndf = opt.ndf
        n_layers = 3

        kw = 4
        padw = 1
        sequence = [nn.Conv2d(in_channels=input_nc,
                              out_channels=ndf,
                              kernel_size=kw,
                              stride=2,
                              padding=padw),
                    nn.LeakyReLU(negative_slope=0.2,
                                 inplace=True)]

        nf_mult = 1
        for n in range(1, n_layers):
            # gradually increase the number of filters
            nf_mult_prev = nf_mult
            nf_mult = min(2 ** n, 8)
            sequence += [nn.Conv2d(in_channels=ndf * nf_mult_prev,
                                   out_channels=ndf * nf_mult,
                                   kernel_size=kw,
                                   stride=2,
                                   padding=padw,
                                   bias=True),
                         nn.InstanceNorm2d(num_features=ndf * nf_mult),
                         nn.LeakyReLU(0.2, True)]

        nf_mult_prev = nf_mult
        nf_mult = min(2 ** n_layers, 8)
        sequence += [nn.Conv2d(in_channels=ndf * nf_mult_prev,
                               out_channels=ndf * nf_mult,
                               kernel_size=kw,
                               stride=1,
                               padding=padw,
                               bias=True),
                     nn.InstanceNorm2d(num_features=ndf * nf_mult),
                     nn.LeakyReLU(negative_slope=0.2,
                                  inplace=True)]

        """ output 1 channel prediction map """
        sequence += [nn.Conv2d(in_channels=ndf * nf_mult,
                               out_channels=1,
                               kernel_size=kw,
                               stride=1,
                               padding=padw)]

        self.model = nn.Sequential(*sequence)

    def forward(self, input):
        """ standard forward """
        return self.model(input)


class GANLoss(nn.Module):
    def __init__(self, gan_mode, target_real_label=1.0, target_fake_label=0.0):
        super(GANLoss, self).__init__()
        self.register_buffer('real_label', t.tensor(target_real_label))
        self.register_buffer('fake_label', t.tensor(target_fake_label))
        self.gan_mode = gan_mode
        if gan_mode == 'lsgan':
            self.loss = nn.MSELoss()
        elif gan_mode == 'vanilla':
            self.loss = nn.BCEWithLogitsLoss()
        elif gan_mode in ['wgangp']:
            self.loss = None
        else:
            raise NotImplementedError('gan mode %s not implemented' % gan_mode)

    def get_target_tensor(self, prediction, target_is_real):
        if target_is_real:
            target_tensor = self.real_label
        else:
            target_tensor = self.fake_label
        # return target_tensor.expand_as(prediction)
        return target_tensor.expand_as(prediction).to(prediction.device)  # was t.device('cuda')

    def __call__(self, prediction, target_is_real):
        if self.gan_mode in ['lsgan', 'vanilla']:
            # prediction is 2D prediction map vector from Discriminator
            target_tensor = self.get_target_tensor(prediction, target_is_real)
            # loss = self.loss(prediction, target_tensor)
            loss = self.loss(prediction, target_tensor)
        elif self.gan_mode == 'wgangp':
            if target_is_real:
                loss = -prediction.mean()
            else:
                loss = prediction.mean()
        return loss


# ---- simple_cygan.py ----
class MovingAverageValueMeter(object):  # stand-in for torchnet.meter.MovingAverageValueMeter
    def __init__(self, windowsize):
        self.values = []
        self.windowsize = windowsize

    def add(self, value):
        self.values = (self.values + [value])[-self.windowsize:]

    def value(self):
        return np.mean(self.values), np.std(self.values)


class Config(object):
    def __init__(self):
        self.name = 'cycleGan_demo'
        self.crop_size = 64                  # shrunk from 220

        # network
        self.input_nc = 3                    # input channel number
        self.output_nc = 3                   # output channel number
        self.n_blocks = 2                    # ResNet Block numbers (affects networks size)
        self.beta1 = 0.5                     # Adam optimizer beta1
        self.gpu = False                     # use GPU?
        self.ngf = 8                         # number of gen filters in the last conv layer
        self.ndf = 8                         # number of discrim filters in the first conv layer
        self.use_dropout = False             # Dropout is not used in the original CycleGAN paper
        self.norm = 'instance'               # normalization, instance by default
        self.gan_mode = 'lsgan'              # MSELoss | BCEWithLogitsLoss

        # training options
        self.batch_size = 1
        self.max_epochs = 1
        self.g_lr = 2e-4                     # generator learning rate
        self.d_lr = 2e-4                     # discriminator learning rate
        self.plot_every = 100  # iterations


def create_dataset(opt):  # random image pairs instead of horse2zebra
    return [{'A': t.rand(opt.batch_size, 3, opt.crop_size, opt.crop_size) * 2 - 1,
             'B': t.rand(opt.batch_size, 3, opt.crop_size, opt.crop_size) * 2 - 1} for _ in range(2)]


def train(**kwargs):
    opt = Config()

    # overwrite options from commandline
    for k_, v_ in kwargs.items():
        setattr(opt, k_, v_)

    device = t.device('cuda') if opt.gpu else t.device('cpu')

    """ Dataset """

    dataset = create_dataset(opt)

    """ Create Network Instances """

    netG_x = ResnetGenerator(opt)
    netG_y = ResnetGenerator(opt)

    netD_x = NLayerDiscriminator(opt)
    netD_y = NLayerDiscriminator(opt)

    """ Define optimizer and Loss """
    optimizer_g = t.optim.Adam(itertools.chain(netG_x.parameters(), netG_y.parameters()),
                               lr=opt.g_lr,
                               betas=(opt.beta1, 0.999))
    optimizer_d = t.optim.Adam(itertools.chain(netD_x.parameters(), netD_y.parameters()),
                               lr=opt.d_lr,
                               betas=(opt.beta1, 0.999))
    optimizers = [optimizer_g, optimizer_d]

    lambda_X = 10.0  # weight for cycle loss (A -> B -> A^)
    lambda_Y = 10.0  # weight for cycle loss (B -> A -> B^)
    lambda_identity = 0.5

    criterionGAN = GANLoss(gan_mode='lsgan')

    # cycle loss
    criterionCycle = nn.L1Loss()

    # identical loss
    criterionIdt = nn.L1Loss()

    # loss meters
    loss_X_meter = MovingAverageValueMeter(opt.plot_every)
    loss_Y_meter = MovingAverageValueMeter(opt.plot_every)
    score_Dx_real_y = MovingAverageValueMeter(opt.plot_every)
    score_Dx_fake_y = MovingAverageValueMeter(opt.plot_every)

    for epoch in range(opt.max_epochs):
        epoch_start_time = time.time()

        for i, data in enumerate(dataset):

            real_x = data['A'].to(device)
            real_y = data['B'].to(device)

            ######################
            # X -> Y' -> X^ cycle
            ######################

            optimizer_g.zero_grad()  # set g_x and g_y gradients to zero

            fake_y = netG_x(real_x)         # X -> Y'
            prediction = netD_x(fake_y)     #netD_x provide feedback to netG_x
            loss_G_X = criterionGAN(prediction, True)

            # cycle_consistance
            x_hat = netG_y(fake_y)          # Y' -> X^
            # Forward cycle loss x^ = || G_y(G_x(real_x)) ||
            loss_cycle_X = criterionCycle(x_hat, real_x) * lambda_X

            # identity loss
            if lambda_identity > 0:
                # netG_x should be identity if real_y is fed: ||netG_x(real_y) - real_y||
                idt_x = netG_x(real_y)
                loss_idt_x = criterionIdt(idt_x, real_y) * lambda_Y * lambda_identity
            else:
                loss_idt_x = 0.

            loss_X = loss_G_X + loss_cycle_X + loss_idt_x
            loss_X.backward(retain_graph=True)
            optimizer_g.step()  # error: IPL007

            loss_X_meter.add(loss_X.item())

            ######################
            # Y -> X' -> Y^ cycle
            ######################

            optimizer_g.zero_grad()  # set g_x and g_y gradients to zero

            fake_x = netG_y(real_y)         # Y -> X'
            prediction = netD_y(fake_x)
            loss_G_Y = criterionGAN(prediction, True)

            y_hat = netG_x(fake_x)          # Y -> X' -> Y^
            # Forward cycle loss y^ = || G_x(G_y(real_y)) ||
            loss_cycle_Y = criterionCycle(y_hat, real_y) * lambda_Y

            # identity loss
            if lambda_identity > 0:
                # netG_y should be identiy if real_x is fed: ||netG_y(real_x) - real_x||
                idt_y = netG_y(real_x)
                loss_idt_y = criterionIdt(idt_y, real_x) * lambda_X * lambda_identity
            else:
                loss_idt_y = 0.

            loss_Y = loss_G_Y + loss_cycle_Y + loss_idt_y
            loss_Y.backward(retain_graph=True)
            optimizer_g.step()  # error: IPL007

            loss_Y_meter.add(loss_Y.item())


            ######################
            # netD_x
            ######################

            optimizer_d.zero_grad()

            # loss_real
            pred_real = netD_x(real_y)
            loss_D_x_real = criterionGAN(pred_real, True)
            score_Dx_real_y.add(float(pred_real.data.mean()))

            # loss_fake
            pred_fake = netD_x(fake_y)
            loss_D_x_fake = criterionGAN(pred_fake, False)
            score_Dx_fake_y.add(float(pred_fake.data.mean()))

            # loss and backward
            loss_D_x = (loss_D_x_real + loss_D_x_fake) * 0.5

            loss_D_x.backward()
            optimizer_d.step()


            ######################
            # netD_y
            ######################

            optimizer_d.zero_grad()

            # loss_real
            pred_real = netD_y(real_x)
            loss_D_y_real = criterionGAN(pred_real, True)

            # loss_fake
            pred_fake = netD_y(fake_x)
            loss_D_y_fake = criterionGAN(pred_fake, False)

            # loss and backward
            loss_D_y = (loss_D_y_real + loss_D_y_fake) * 0.5

            loss_D_y.backward()
            optimizer_d.step()


if __name__ == '__main__':
    train()
