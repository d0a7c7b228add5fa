"""GANimator joint training with --skeleton_aware 0: every GAN_model of a stage group runs optimize_parameters in turn, and a later stage's generator loss goes back through the earlier stage's generator, whose optimizerG already stepped."""
# outcome: inplace-error
# source: https://github.com/PeizhuoLi/ganimator/issues/5
# repo: PeizhuoLi/ganimator
# category: trainer
# twin: 101_ganimator_joint_train_stage_step_before_next_stage_backward_fixed.py
import argparse
import functools
import random
from functools import partial

import torch
import torch.nn as nn
import torch.nn.functional as F


# ---- stand-ins: dataset/motion.py and bvh/ (no .bvh file here), models/skeleton.py ----
class _BVHFile:
    def __init__(self, n_joints):
        self.n_joints = n_joints

    def get_neighbor(self, threshold=2, enforce_contact=False):
        return [[i] for i in range(self.n_joints)]


class MotionData:
    def __init__(self, n_channels=12, length=40):
        self.n_channels = n_channels
        self.n_rot = 6
        self.bvh_file = _BVHFile(4)
        self.motion = torch.randn(1, n_channels, length)

    def __len__(self):
        return self.motion.shape[-1]

    def sample(self, size):
        return F.interpolate(self.motion, size=size, mode='linear', align_corners=False)


SkeletonConv = None  # only built with --skeleton_aware 1


# ---- models/utils.py ----
def get_layered_mask(layer_mode, n_rot=6):
    mask_loc = [-6, -5, -4]

    if 'locrot' in layer_mode:
        mask_layered = mask_loc + list(range(n_rot))
    elif 'all' in layer_mode:
        mask_layered = slice(None)
    else:
        raise Exception('Unknown layer mode')
    return mask_layered


def get_interpolator(args=None, linear=None, nearest=None):
    if args is not None:
        nearest = args.nearest_interpolation
        linear = not args.nearest_interpolation
    if linear and nearest:
        raise Exception('Cannot use both linear and nearest interpolator')

    if linear:
        return partial(F.interpolate, mode='linear', align_corners=False)
    elif nearest:
        return partial(F.interpolate, mode='nearest')
    else:
        raise Exception('Unknown interpolate mode')


class ImagePool:
    def __init__(self, pool_size):
        self.pool_size = pool_size
        if self.pool_size > 0:  # create an empty pool
            self.num_imgs = 0
            self.images = []

    def query(self, images):
        if self.pool_size == 0:  # if the buffer size is 0, do nothing
            return images
        return_images = []
        for image in images:
            image = torch.unsqueeze(image.data, 0)
            if self.num_imgs < self.pool_size:   # if the buffer is not full; keep inserting current images to the buffer
                self.num_imgs = self.num_imgs + 1
                self.images.append(image)
                return_images.append(image)
            else:
                p = random.uniform(0, 1)
                if p > 0.5:
                    random_id = random.randint(0, self.pool_size - 1)  # randint is inclusive
                    tmp = self.images[random_id].clone()
                    self.images[random_id] = image
                    return_images.append(tmp)
                else:
                    return_images.append(image)
        return_images = torch.cat(return_images, 0)   # collect all the images and return
        return return_images


class GAN_loss(nn.Module):
    def __init__(self, gan_mode, real_label=1.0, fake_label=0.0):
        super(GAN_loss, self).__init__()
        self.gan_mode = gan_mode
        if gan_mode == 'lsgan':
            self.loss = nn.MSELoss()
        elif gan_mode == 'vanilla':
            self.loss = nn.BCEWithLogitsLoss()
        elif gan_mode == 'wgan-gp':
            self.loss = self.wgan_loss
            real_label = 1
            fake_label = 0
        elif gan_mode == 'none':
            self.loss = None
        else:
            raise Exception('Unknown GAN mode')

        self.register_buffer('real_label', torch.tensor(real_label))
        self.register_buffer('fake_label', torch.tensor(fake_label))

    @staticmethod
    def wgan_loss(prediction, target):
        lmbda = torch.ones_like(target)
        lmbda[target == 1] = -1
        return (prediction * lmbda).mean()

    def get_target_tensor(self, prediction, target_is_real):
        if target_is_real:
            target_tensor = self.real_label
        else:
            target_tensor = self.fake_label
        return target_tensor.expand_as(prediction)

    def __call__(self, prediction, target_is_real):
        target_tensor = self.get_target_tensor(prediction, target_is_real)
        loss = self.loss(prediction, target_tensor)
        return loss


class VeloLabelConsistencyLoss(nn.Module):
    """stand-in (the forward kinematics needs the skeleton of a .bvh file): foot velocity
    where the contact label says the foot is down"""
    def __init__(self, motion_data, detach_label=False, use_sigmoid=False, use_6d_fk=False):
        super(VeloLabelConsistencyLoss, self).__init__()
        self.detach_label = detach_label
        self.use_sigmoid = use_sigmoid

    def __call__(self, motion):
        pos, contact = motion[:, -6:-3], motion[:, -2:]
        if self.use_sigmoid:
            contact = torch.sigmoid((contact - 0.5) * 2 * 6)
        velo = pos[..., 1:] - pos[..., :-1]
        return (velo.norm(dim=1, keepdim=True) * contact[..., 1:]).mean()


class RecLoss:
    def __init__(self, motion_data, use_fk=False, rec_loss_type='L1'):
        self.criterion = nn.L1Loss() if rec_loss_type == 'L1' else nn.MSELoss()

    def __call__(self, a, b):
        return self.criterion(a, b)


# ---- models/gan1d.py ----
class Conv1dModel(nn.Module):
    def __init__(self, channels, kernel_size, padding=-1, last_active='None', padding_mode='zeros', batch_norm=False,
                 skeleton_aware=False, neighbour_list=None, activation='LeakyReLU'):
        super(Conv1dModel, self).__init__()
        conv1d = functools.partial(SkeletonConv, neighbour_list=neighbour_list, joint_num=len(neighbour_list)) \
            if skeleton_aware else nn.Conv1d
        if padding == -1:
            if kernel_size % 2 == 0:
                raise Exception('Only support odd kernel size for now')
            padding = (kernel_size - 1) // 2
        self.layers = nn.ModuleList()
        for i in range(len(channels) - 1):
            in_c = channels[i]
            out_c = channels[i + 1]
            if i == len(channels) - 2 and out_c == 1:
                conv1d = nn.Conv1d
            bias = not batch_norm
            if i == len(channels) - 2:
                bias = True
            seq = [conv1d(in_channels=in_c, out_channels=out_c, kernel_size=kernel_size,
                          padding=padding, padding_mode=padding_mode, bias=bias)]
            if i < len(channels) - 2:
                if batch_norm:
                    seq.append(nn.BatchNorm1d(num_features=out_c))

                if activation == 'LeakyReLU':
                    seq.append(nn.LeakyReLU(negative_slope=0.2, inplace=True))
                elif activation == 'ReLU':
                    seq.append(nn.ReLU(inplace=True))
                else:
                    raise Exception('Unknown activation')
            else:
                if last_active is not None:
                    seq.append(last_active)
            self.layers.append(nn.Sequential(*seq))
        self.output = None

    def forward(self, input, prev_img=None, cond=None, cond_requires_mask=False):
        if cond is not None:
            layer_mask = get_layered_mask('locrot', 6)
            if cond_requires_mask:
                cond = cond[:, layer_mask]
            input[:, layer_mask] = cond

        for layer in self.layers:
            input = layer(input)  # saved-by

        if cond is not None:
            input[:, layer_mask] = cond - prev_img[:, layer_mask]
        self.output = input
        return input


class GAN_model:
    def __init__(self, gen: nn.Module, disc: nn.Module, args, dataset):
        self.gen = gen
        self.disc = disc
        self.optimizerG = torch.optim.Adam(gen.parameters(), lr=args.lr_g)
        self.optimizerD = torch.optim.Adam(disc.parameters(), lr=args.lr_d)
        self.fake_pool = ImagePool(50)
        self.criterion_gan = GAN_loss(args.gan_mode).to(args.device)
        self.criterion_consistency = VeloLabelConsistencyLoss(dataset, args.detach_label, args.use_sigmoid, args.use_6d_fk).to(args.device)
        self.criterion_rec = RecLoss(dataset, False, args.rec_loss_type)
        self.gan_mode = args.gan_mode
        self.fake_res = None
        self.device = torch.device(args.device)
        self.loss_D = torch.tensor(0.)
        self.loss_G = torch.tensor(0.)
        self.loss_gp = torch.tensor(0.)
        self.loss_rec = torch.tensor(0.)
        self.loss_consistency = torch.tensor(0.)
        self.loss_G_total = torch.tensor(0.)
        self.loss_names = ['loss_D', 'loss_G', 'loss_gp', 'loss_rec', 'loss_consistency', 'loss_G_total']
        self.args = args

    def disc_requires_grad_(self, requires_grad):
        for para in self.disc.parameters():
            para.requires_grad = requires_grad

    def backward_D_basic(self, netD, real, fake):
        # Real
        pred_real = netD(real)
        loss_D_real = self.criterion_gan(pred_real, True)
        # Fake
        pred_fake = netD(fake.detach())
        loss_D_fake = self.criterion_gan(pred_fake, False)
        # Combined loss and calculate gradients
        loss_D = (loss_D_real + loss_D_fake) * 0.5
        loss_D.backward()
        return loss_D

    def backward_D(self):
        fake = self.fake_pool.query(self.fake_res.detach())
        self.loss_D = self.backward_D_basic(self.disc, self.real_res, fake)

        if self.gan_mode == 'wgan-gp':
            alpha = torch.rand((1,), device=self.device)
            interpolates = alpha * self.real_res + ((1 - alpha) * self.fake_res.detach())
            interpolates.requires_grad_(True)

            disc_interpolates = self.disc(interpolates)

            gradients = torch.autograd.grad(outputs=disc_interpolates, inputs=interpolates,
                                            grad_outputs=torch.ones_like(disc_interpolates),
                                            create_graph=True, retain_graph=True, only_inputs=True)[0]
            gradient_penalty = ((gradients.norm(2, dim=1) - 1) ** 2).mean()
            gradient_penalty_back = gradient_penalty * self.args.lambda_gp
            gradient_penalty_back.backward()
            self.loss_gp = gradient_penalty

    def backward_G(self):
        pred_fake = self.disc(self.fake_res)
        self.loss_G = self.criterion_gan(pred_fake, True)
        self.loss_consistency = self.criterion_consistency(self.fake_res) if self.args.contact else torch.tensor(0.)
        loss_total = self.loss_G + \
                     self.loss_consistency * self.args.lambda_consistency
        self.loss_G_total = loss_total
        loss_total.backward(retain_graph=True)

    def forward_proxy(self, real, img_base=0):
        assert real.shape[-1] == img_base.shape[-1]
        self.delta = self.gen.output
        self.real_res = real
        self.fake_res = self.delta + img_base

    def optimize_parameters(self, gen=True, disc=True, rec=False):
        if self.args.no_gan:
            gen = False
            disc = False
        if gen:
            self.disc_requires_grad_(False)
            self.optimizerG.zero_grad()
            self.backward_G()
            self.optimizerG.step()  # error: IPL007

        if disc:
            self.disc_requires_grad_(True)
            self.optimizerD.zero_grad()
            self.backward_D()
            self.optimizerD.step()

        if rec:
            self.optimizerG.zero_grad()
            self.loss_rec = self.criterion_rec(self.fake_res, self.real_res)
            loss_rec_back = self.loss_rec * self.args.lambda_rec
            loss_rec_back.backward(retain_graph=True)
            self.optimizerG.step()  # error: IPL007


# ---- models/__init__.py ----
def get_channels_list(args, dataset, neighbour_list):
    n_channels = dataset.n_channels

    joint_num = len(neighbour_list)

    base_channel = args.base_channel if args.base_channel != -1 else 128
    n_layers = args.n_layers if args.n_layers != -1 else 4

    channels_list = [n_channels]
    for i in range(n_layers - 1):
        channels_list.append(base_channel * (2 ** ((i+1) // 2)))
    channels_list += [n_channels]
    if args.skeleton_aware:
        channels_list = [((n - 1) // joint_num + 1) * joint_num for n in channels_list]

    return channels_list


def get_group_list(args, num_stages):
    group_list = []
    for i in range(0, num_stages, args.group_size):
        group_list.append(list(range(i, min(i + args.group_size, num_stages))))
    return group_list


def create_model(args, dataset, evaluation=False, channels_list=None):
    if args.last_gen_active == 'None':
        gen_last_active = None
    elif args.last_gen_active == 'Tanh':
        gen_last_active = nn.Tanh()
    else:
        raise Exception('Unrecognized last_gen_active')

    neighbour_list = dataset.bvh_file.get_neighbor(threshold=args.neighbour_dist, enforce_contact=args.enforce_contact)
    if channels_list is None:
        channels_list = get_channels_list(args, dataset, neighbour_list)

    gen = Conv1dModel(channels_list, args.kernel_size, last_active=gen_last_active,
                      padding_mode=args.padding_mode, batch_norm=args.batch_norm,
                      neighbour_list=neighbour_list, skeleton_aware=args.skeleton_aware).to(args.device)
    if evaluation:
        return gen
    else:
        disc = Conv1dModel(channels_list[:-1] + [1,], args.kernel_size, last_active=None,
                           padding_mode=args.padding_mode, batch_norm=args.batch_norm,
                           neighbour_list=neighbour_list, skeleton_aware=args.skeleton_aware).to(args.device)
        gan_model = GAN_model(gen, disc, args, dataset)
        return gen, disc, gan_model


# ---- models/architecture.py ----
def get_pyramid_lengths(args, dest):
    lengths = [16]
    ratio = eval(args.ratio)
    lengths[0] = int(dest * ratio)
    while lengths[-1] < dest:
        lengths.append(int(lengths[-1] * args.scaling_rate))
        if lengths[-1] == lengths[-2]:
            lengths[-1] += 1
    lengths[-1] = dest
    return lengths


def joint_train(all_reals, gens, gan_models, all_lengths, all_z_star, all_amps, args, loss_recorder,
                ConGen=None):
    loop = range(args.num_iters)

    interpolator = get_interpolator(args)
    for iters in loop:
        for i in range(args.D_fact + args.G_fact + 1):
            for m in range(len(all_reals)):
                reals = all_reals[m]
                z_star = all_z_star[m]
                amps = all_amps[m]
                lengths = all_lengths[m]
                mode = 'random' if i < args.D_fact + args.G_fact else 'rec'
                if ConGen is not None and mode != 'rec':
                    conds = ConGen.random_generate(lengths)
                else:
                    conds = reals
                imgs = draw_example(gens, mode, z_star, lengths, amps, batch_size=1, args=args, all_img=True,
                                    full_noise=args.full_noise, conds=conds)
                imgs.append(torch.zeros_like(reals[0]))  # Trick for get the base image for stage_id = 0

                for j in range(len(gan_models)):
                    stage_id = j + len(gens) - len(gan_models)
                    gan_models[j].forward_proxy(reals[stage_id], interpolator(imgs[stage_id - 1], lengths[stage_id]))

                # Discriminator : Generator : Reconstruction = args.D_fact : args.G_fact : 1
                if i < args.D_fact:
                    optimize_lambda = lambda x: x.optimize_parameters(gen=False, disc=True, rec=False)
                elif i < args.D_fact + args.G_fact:
                    optimize_lambda = lambda x: x.optimize_parameters(gen=True, disc=False, rec=False)
                else:
                    optimize_lambda = lambda x: x.optimize_parameters(gen=False, disc=False, rec=True)
                list(map(optimize_lambda, gan_models))

        for j, gan_model in enumerate(gan_models):
            stage_id = j + len(gens) - len(gan_models)
            for loss_name in gan_model.loss_names:
                loss_recorder.add_scalar(f'{stage_id:02d}/{loss_name}', getattr(gan_model, loss_name))


def draw_example(gens, mode, z_star, lengths, amps, batch_size, args, all_img=False, start_level=0,
                 conds=None, full_noise=False, num_cond=0, given_noise=None):
    if not isinstance(conds, list): conds = [conds]
    if args.conditional_generator:
        num_cond = args.num_conditional_generator
    device = args.device

    interpolater = get_interpolator(args)

    if z_star.shape[-1] != lengths[0]:
        z_star = interpolater(z_star, lengths[0])

    imgs = []
    if gens is None:
        return torch.zeros((batch_size, 1, lengths[0]), device=device)
    # with torch.no_grad():
    prev_img = torch.zeros((batch_size, z_star.shape[1], lengths[0]), device=device)
    for step, (gen, length, amp) in enumerate(zip(gens, lengths, amps)):
        current_mode = 'rec' if step < start_level else mode

        # Determine noise
        if args.no_noise:
            amp = 0.
        if current_mode == 'random' or current_mode == 'manip' or current_mode == 'cond':
            n_channel = z_star.shape[1] if full_noise else 1
            noise = torch.randn((batch_size, n_channel, length), device=device) * amp
            if given_noise is not None and step < len(given_noise):
                noise = given_noise[step]
            if noise.shape[1] == 1:
                noise = noise.repeat(1, z_star.shape[1], 1)
        elif current_mode == 'rec':
            noise = z_star if step == 0 else 0
        else:
            raise Exception('Unknown generating mode')

        # Execute generate model
        if current_mode == 'manip' and step < len(conds):
            prev_img = conds[step]
        elif step < num_cond:
            prev_img = gen(noise + prev_img, prev_img, cond=conds[step], cond_requires_mask=True) + prev_img
        else:
            prev_img = gen(noise + prev_img, prev_img) + prev_img

        # Save result and upsample for next level
        imgs.append(prev_img)
        if len(lengths) >= step + 2:
            prev_img = interpolater(prev_img, size=lengths[step + 1])

    return prev_img if not all_img else imgs


# ---- loss_recorder.py ----
class LossRecorder:
    def __init__(self, writer=None):
        self.losses = {}

    def add_scalar(self, name, val):
        self.losses.setdefault(name, []).append(float(val))


# ---- option.py (the options train.py reads) ----
class TrainOptionParser:
    def __init__(self):
        self.parser = argparse.ArgumentParser()
        self.parser.add_argument('--device', type=str, default='cpu')
        self.parser.add_argument('--gan_mode', type=str, default='wgan-gp')
        self.parser.add_argument('--padding_mode', type=str, default='reflect')
        self.parser.add_argument('--batch_norm', type=int, default=0)
        self.parser.add_argument('--scaling_rate', type=float, default=1/0.75)
        self.parser.add_argument('--kernel_size', type=int, default=5)
        self.parser.add_argument('--last_gen_active', type=str, default='None')
        self.parser.add_argument('--skeleton_aware', type=int, default=1)
        self.parser.add_argument('--neighbour_dist', type=int, default=2)
        self.parser.add_argument('--ratio', type=str, default='1./5')
        self.parser.add_argument('--no_noise', type=int, default=0)
        self.parser.add_argument('--no_gan', type=int, default=0)
        self.parser.add_argument('--contact', type=int, default=1)
        self.parser.add_argument('--enforce_contact', type=int, default=1)
        self.parser.add_argument('--nearest_interpolation', type=int, default=0)
        self.parser.add_argument('--conditional_generator', type=int, default=0)
        self.parser.add_argument('--full_noise', type=int, default=0)
        self.parser.add_argument('--num_conditional_generator', type=int, default=7)
        self.parser.add_argument('--num_stages_limit', type=int, default=-1)
        self.parser.add_argument('--group_size', type=int, default=2)
        self.parser.add_argument('--base_channel', type=int, default=-1)
        self.parser.add_argument('--n_layers', type=int, default=-1)
        self.parser.add_argument('--D_fact', type=int, default=5)
        self.parser.add_argument('--G_fact', type=int, default=1)
        self.parser.add_argument('--lr_g', type=float, default=1e-4)
        self.parser.add_argument('--lr_d', type=float, default=1e-4)
        self.parser.add_argument('--num_iters', type=int, default=15000)
        self.parser.add_argument('--lambda_gp', type=float, default=1)
        self.parser.add_argument('--lambda_rec', type=float, default=50.)
        self.parser.add_argument('--rec_loss_type', type=str, default='L1')
        self.parser.add_argument('--lambda_consistency', type=float, default=5.)
        self.parser.add_argument('--detach_label', type=int, default=0)
        self.parser.add_argument('--use_sigmoid', type=int, default=1)
        self.parser.add_argument('--requires_noise_amp', type=int, default=1)
        self.parser.add_argument('--full_zstar', type=int, default=1)
        self.parser.add_argument('--use_6d_fk', type=int, default=0)

    def parse_args(self, args_str=None):
        return self.parser.parse_args(args_str)


# ---- train.py ----
def main():
    parser = TrainOptionParser()
    # the run (--skeleton_aware 0), shrunk: few iterations, small channels, two stages
    args = parser.parse_args(['--skeleton_aware', '0', '--num_iters', '1', '--D_fact', '1', '--G_fact', '1',
                              '--base_channel', '8', '--n_layers', '3', '--ratio', '1./2'])
    device = torch.device(args.device)

    motion_data = MotionData(n_channels=12, length=24)
    multiple_data = [motion_data]

    interpolator = get_interpolator(args)

    lengths = []
    min_len = 10000
    for i in range(len(multiple_data)):
        new_length = get_pyramid_lengths(args, len(multiple_data[i]))
        min_len = min(min_len, len(new_length))
        if args.num_stages_limit != -1:
            new_length = new_length[:args.num_stages_limit]
        lengths.append(new_length)

    for i in range(len(multiple_data)):
        lengths[i] = lengths[i][-min_len:]

    loss_recorder = LossRecorder(None)
    ConGen = None

    gans = []
    gens = []
    amps = [[] for _ in range(len(multiple_data))]
    if args.full_zstar:
        z_star = [torch.randn((1, motion_data.n_channels, lengths[i][0]), device=device) for i in range(len(multiple_data))]
    else:
        z_star = [torch.randn((1, 1, lengths[i][0]), device=device).repeat(1, motion_data.n_channels, 1) for i in range(len(multiple_data))]
    reals = [[] for _ in range(len(multiple_data))]
    gt_deltas = [[] for _ in range(len(multiple_data))]
    training_groups = get_group_list(args, len(lengths[0]))

    for step in range(len(lengths[0])):
        for i in range(len(multiple_data)):
            length = lengths[i][step]
            motion_data = multiple_data[i]
            reals[i].append(motion_data.sample(size=length).to(device))
            last_real = reals[i][-2] if step > 0 else torch.zeros_like(reals[i][-1])
            amps[i].append(torch.nn.MSELoss()(reals[i][-1], interpolator(last_real, length)) ** 0.5)
            gt_deltas[i].append(reals[i][-1] - interpolator(last_real, length))

        gen, disc, gan_model = create_model(args, motion_data, evaluation=False)

        gens.append(gen)
        gans.append(gan_model)

    amps = torch.tensor(amps)
    if not args.requires_noise_amp:
        amps = torch.ones_like(amps)

    last_stage = 0
    for group in training_groups:
        curr_stage = last_stage + len(group)
        group_gan_models = [gans[i] for i in group]
        joint_train(reals, gens[:curr_stage], group_gan_models, lengths,
                    z_star, amps, args, loss_recorder, ConGen)

        last_stage = curr_stage
    print('Levels:', lengths, 'losses:', {k: v[-1] for k, v in loss_recorder.losses.items()})


if __name__ == '__main__':
    main()
