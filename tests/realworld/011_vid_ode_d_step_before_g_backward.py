"""Vid-ODE train(): loss_netG includes the adversarial terms computed through netD_seq / netD_img, but optimizer_netD.step() runs before loss_netG.backward()."""
# outcome: inplace-error
# source: https://github.com/psh01087/Vid-ODE/issues/6
# repo: psh01087/Vid-ODE
# category: trainer
# twin: 012_vid_ode_d_step_before_g_backward_fixed.py
import torch
import torch.nn as nn
import torch.optim as optim

import argparse
import os
import time
import datetime
import json
from pathlib import Path
import numpy as np


# ---- utils.py (the helpers train() calls; checkpoints and images are not written here) ----
class utils:
    @staticmethod
    def create_folder_ifnotexist(folder_path):
        folder_path = Path(folder_path)
        if not folder_path.exists():
            folder_path.mkdir(parents=True, exist_ok=False)
        return folder_path

    @staticmethod
    def update_learning_rate(optimizer, decay_rate=0.999, lowest=1e-3):
        for param_group in optimizer.param_groups:
            lr = param_group['lr']
            lr = max(lr * decay_rate, lowest)
            param_group['lr'] = lr

    @staticmethod
    def get_data_dict(dataloader):
        data_dict = dataloader.__next__()
        return data_dict

    @staticmethod
    def get_next_batch(data_dict):
        batch_dict = {}
        for key in data_dict:
            batch_dict[key] = data_dict[key]
        return batch_dict

    @staticmethod
    def save_checkpoint(model, path):
        pass


class visualize:
    @staticmethod
    def make_save_sequence(opt, batch_dict, res):
        return None, None, None

    @staticmethod
    def save_extrap_images(opt, gt, pred, path, total_step):
        pass

    @staticmethod
    def save_interp_images(opt, gt, pred, path, total_step):
        pass


# ---- dataloader.py, shrunk: random KTH-like clips instead of the data set ----
def parse_datasets(opt, device):
    def loader():
        while True:
            b, t, c, s = opt.batch_size, opt.sample_size // 2, opt.input_dim, opt.input_size
            yield {
                "observed_data": torch.rand(b, t, c, s, s),
                "observed_tp": torch.linspace(0, 0.5, t),
                "observed_mask": torch.ones(b, t, 1),
                "data_to_predict": torch.rand(b, t, c, s, s),
                "tp_to_predict": torch.linspace(0.5, 1, t),
                "mask_predicted_data": torch.ones(b, t, 1),
            }
    return {"train_dataloader": loader(), "test_dataloader": loader(),
            "n_train_batches": 2, "n_test_batches": 1}


# ---- models/conv_odegru.py, shrunk: the ODE-ConvGRU encoder/decoder replaced by a small conv
# generator with the same compute_all_losses interface (torchdiffeq is not installed here) ----
class VidODE(nn.Module):

    def __init__(self, opt, device):
        super(VidODE, self).__init__()

        self.opt = opt
        self.device = device

        # initial function
        self.build_model()

    def build_model(self):
        init_dim = self.opt.init_dim
        self.encoder = nn.Sequential(nn.Conv2d(self.opt.input_dim, init_dim, 3, 1, 1), nn.ReLU())
        self.decoder = nn.Conv2d(init_dim, self.opt.input_dim * 2, 3, 1, 1)

    def get_reconstruction(self, time_steps_to_predict, truth, truth_time_steps, mask=None, out_mask=None):
        b, t, c, h, w = truth.shape
        pred_outputs = self.decoder(self.encoder(truth.view(b * t, c, h, w))).view(b, t, 2 * c, h, w)
        pred_intermediates, pred_masks = pred_outputs[:, :, :c, ...], torch.sigmoid(pred_outputs[:, :, c:, ...])
        last_frame = truth[:, -1:, ...] if self.opt.extrap else truth[:, :1, ...]
        pred_x = pred_masks * last_frame + (1 - pred_masks) * pred_intermediates

        ### extra information
        extra_info = {}
        extra_info["pred_intermediates"] = pred_intermediates
        extra_info["pred_masks"] = pred_masks

        return pred_x, extra_info

    def get_mse(self, truth, pred_x, mask=None):

        b, _, c, h, w = truth.size()

        if mask is None:
            selected_time_len = truth.size(1)
            selected_truth = truth
        else:
            selected_time_len = int(mask[0].sum())
            selected_truth = truth[mask.squeeze(-1).bool()].view(b, selected_time_len, c, h, w)
        loss = torch.sum(torch.abs(pred_x - selected_truth)) / (b * selected_time_len * c * h * w)
        return loss

    def get_diff(self, data, mask=None):

        data_diff = data[:, 1:, ...] - data[:, :-1, ...]
        b, _, c, h, w = data_diff.size()
        selected_time_len = int(mask[0].sum())
        masked_data_diff = data_diff[mask.squeeze(-1).bool()].view(b, selected_time_len, c, h, w)

        return masked_data_diff

    def compute_all_losses(self, batch_dict):

        batch_dict["tp_to_predict"] = batch_dict["tp_to_predict"].to(self.device)
        batch_dict["observed_data"] = batch_dict["observed_data"].to(self.device)
        batch_dict["observed_tp"] = batch_dict["observed_tp"].to(self.device)
        batch_dict["observed_mask"] = batch_dict["observed_mask"].to(self.device)
        batch_dict["data_to_predict"] = batch_dict["data_to_predict"].to(self.device)
        batch_dict["mask_predicted_data"] = batch_dict["mask_predicted_data"].to(self.device)

        pred_x, extra_info = self.get_reconstruction(
            time_steps_to_predict=batch_dict["tp_to_predict"],
            truth=batch_dict["observed_data"],
            truth_time_steps=batch_dict["observed_tp"],
            mask=batch_dict["observed_mask"],
            out_mask=batch_dict["mask_predicted_data"])

        # batch-wise mean
        loss = torch.mean(self.get_mse(truth=batch_dict["data_to_predict"],
                                       pred_x=pred_x,
                                       mask=batch_dict["mask_predicted_data"]))

        if not self.opt.extrap:
            init_image = batch_dict["observed_data"][:, 0, ...]
        else:
            init_image = batch_dict["observed_data"][:, -1, ...]

        data = torch.cat([init_image.unsqueeze(1), batch_dict["data_to_predict"]], dim=1)
        data_diff = self.get_diff(data=data, mask=batch_dict["mask_predicted_data"])

        loss = loss + torch.mean(self.get_mse(truth=data_diff, pred_x=extra_info["pred_intermediates"], mask=None))

        results = {}
        results["loss"] = torch.mean(loss)
        results["pred_y"] = pred_x

        return results


# ---- models/gan.py (channels shrunk 64/128/256/512 -> 8/16/32/64) ----
class ConvNormAct(nn.Module):

    def __init__(self, in_ch, out_ch, kernel_size, stride, padding, act_type='relu'):

        super(ConvNormAct, self).__init__()

        layers = []
        layers += [nn.Conv2d(in_ch, out_ch, kernel_size, stride, padding)]

        layers += [nn.InstanceNorm2d(out_ch)]

        if act_type == 'relu':
            layers += [nn.ReLU(inplace=True)]
        elif act_type == 'lrelu':
            layers += [nn.LeakyReLU(0.2)]

        self.main = nn.Sequential(*layers)

    def forward(self, x):
        return self.main(x)


class Discriminator(nn.Module):

    def __init__(self, in_ch, device, seq=False, is_extrap=True):

        super(Discriminator, self).__init__()

        self.device = device
        self.seq = seq
        self.is_extrap = is_extrap

        self.layer_1 = nn.Sequential(
            nn.Conv2d(in_ch, 8, kernel_size=4, stride=2, padding=1, bias=False),
            nn.LeakyReLU(0.2))
        self.layer_2 = ConvNormAct(8, 16, kernel_size=4, stride=2, padding=1, act_type='lrelu')
        self.layer_3 = ConvNormAct(16, 32, kernel_size=4, stride=2, padding=1, act_type='lrelu')
        self.layer_4 = ConvNormAct(32, 64, kernel_size=4, stride=1, padding=2, act_type='lrelu')
        self.last_conv = nn.Conv2d(64, 8, kernel_size=4, stride=1, padding=2, bias=False)

    def forward(self, x):
        h = self.layer_1(x)
        h = self.layer_2(h)
        h = self.layer_3(h)
        h = self.layer_4(h)
        return self.last_conv(h)  # saved-by

    def netD_adv_loss(self, real, fake, input_real):

        if self.seq:
            if self.is_extrap:
                real, fake = self.rearrange_seq(real, fake, input_real, only_fake=False)
            else:
                real, fake = self.rearrange_seq_interp(real, fake, input_real, only_fake=False)
        elif not self.seq:
            b, t, c, h, w = fake.size()
            real = real.contiguous().view(-1, c, h, w)
            fake = fake.contiguous().view(-1, c, h, w)

        pred_fake = self.forward(fake.detach())
        pred_real = self.forward(real)

        # GAN loss type
        real_label = torch.ones_like(pred_real).to(self.device)
        loss_fake = torch.mean((pred_fake) ** 2)
        loss_real = torch.mean((pred_real - real_label) ** 2)
        loss_D = (loss_real + loss_fake) * 0.5

        return loss_D

    def netG_adv_loss(self, fake, input_real):
        b, t, c, h, w = fake.size()
        if self.seq:
            if self.is_extrap:
                fake = self.rearrange_seq(None, fake, input_real, only_fake=True)
            else:
                fake = self.rearrange_seq_interp(None, fake, input_real, only_fake=True)
        elif not self.seq:
            fake = fake.contiguous().view(-1, c, h, w)

        pred_fake = self.forward(fake)

        # GAN loss type
        real_label = torch.ones_like(pred_fake).to(self.device)
        loss_real = torch.mean((pred_fake - real_label) ** 2)

        return loss_real

    def rearrange_seq(self, real, fake, input_real, only_fake=True):

        b, t, c, h, w = fake.size()
        fake_seqs = []
        for i in range(t):
            fake_seq = torch.cat([input_real[:, i:, ...], fake[:, :i+1, ...]], dim=1)
            fake_seqs += [fake_seq]
        fake_seqs = torch.cat(fake_seqs, dim=0).view(b * t, -1, h, w)

        if only_fake:
            return fake_seqs

        real_seqs = []
        for i in range(t):
            real_seq = torch.cat([input_real[:, i:, ...], real[:, :i+1, ...]], dim=1)
            real_seqs += [real_seq]
        real_seqs = torch.cat(real_seqs, dim=0).view(b * t, -1, h, w)

        return real_seqs, fake_seqs

    def rearrange_seq_interp(self, real, fake, input_real, only_fake=True):

        b, t, c, h, w = fake.size()
        mask = torch.eye(t).float().to(self.device)  # .cuda() in the repository
        fake_seqs = []
        for i in range(t):
            reshaped_mask = mask[i].view(1, -1, 1, 1, 1)
            fake_seq = (1 - reshaped_mask) * input_real + reshaped_mask * fake
            fake_seqs += [fake_seq]
        fake_seqs = torch.cat(fake_seqs, dim=0).view(b * t, -1, h, w)

        if only_fake:
            return fake_seqs

        real_seqs = []
        for i in range(t):
            reshaped_mask = mask[i].view(1, -1, 1, 1, 1)
            real_seq = (1 - reshaped_mask) * input_real + reshaped_mask * real
            real_seqs += [real_seq]
        real_seqs = torch.cat(real_seqs, dim=0).view(b * t, -1, h, w)

        return real_seqs, fake_seqs


def create_netD(opt, device):

    # Model
    seq_len = opt.sample_size // 2
    if opt.irregular and not opt.extrap:
        seq_len = opt.sample_size

    if opt.extrap:
        seq_len += 1

    netD_img = Discriminator(in_ch=3, device=device, seq=False, is_extrap=opt.extrap).to(device)
    netD_seq = Discriminator(in_ch=3 * (seq_len), device=device, seq=True, is_extrap=opt.extrap).to(device)

    # Optimizer
    optimizer_netD = optim.Adamax(list(netD_img.parameters()) + list(netD_seq.parameters()), lr=opt.lr)

    return netD_img, netD_seq, optimizer_netD


# ---- main.py ----
def get_opt():
    parser = argparse.ArgumentParser()

    parser.add_argument("--name", default="vid_ode", help='Specify experiment')
    parser.add_argument('-j', '--workers', type=int, default=4)
    parser.add_argument('-b', '--batch_size', type=int, default=2)
    parser.add_argument('--epoch', type=int, default=1, help='epoch')
    parser.add_argument('--phase', default="train", choices=["train", "test_met"])

    # Hyper-parameters
    parser.add_argument('--lr', type=float, default=1e-3, help="Starting learning rate.")
    parser.add_argument('--window_size', type=int, default=20, help="Window size to sample")
    parser.add_argument('--sample_size', type=int, default=10, help="Number of time points to sub-sample")

    # Hyper-parameters
    parser.add_argument('--lamb_adv', type=float, default=0.003, help="Adversarial Loss lambda")

    # Network variants for experiment..
    parser.add_argument('--input_size', type=int, default=16)
    parser.add_argument('--dec_diff', type=str, default='dopri5', choices=['dopri5', 'euler', 'adams', 'rk4'])
    parser.add_argument('--n_layers', type=int, default=2, help='A number of layer of ODE func')
    parser.add_argument('--n_downs', type=int, default=2)
    parser.add_argument('--init_dim', type=int, default=4)
    parser.add_argument('--input_norm', action='store_true', default=False)

    parser.add_argument('--run_backwards', action='store_true', default=True)
    parser.add_argument('--irregular', action='store_true', default=False, help="Train with irregular time-steps")

    # Need to be tested...
    parser.add_argument('--extrap', action='store_true', default=False, help="Set extrapolation mode. If this flag is not set, run interpolation mode.")

    # Test argument:
    parser.add_argument('--split_time', default=10, type=int, help='Split time for extrapolation or interpolation ')

    # Log
    parser.add_argument("--ckpt_save_freq", type=int, default=5000)
    parser.add_argument("--log_print_freq", type=int, default=10)
    parser.add_argument("--image_print_freq", type=int, default=1000)

    # Path (Data & Checkpoint & Tensorboard)
    parser.add_argument('--dataset', type=str, default='kth', choices=["mgif", "hurricane", "kth", "penn"])
    parser.add_argument('--log_dir', type=str, default='./logs', help='save tensorboard infos')
    parser.add_argument('--checkpoint_dir', type=str, default='./checkpoints', help='save checkpoint infos')
    parser.add_argument('--test_dir', type=str, help='load saved model')

    opt = parser.parse_args([])

    opt.input_dim = 3

    if opt.phase == 'train':
        # Make Directory
        STORAGE_PATH = utils.create_folder_ifnotexist("./storage")
        STORAGE_PATH = STORAGE_PATH.resolve()
        LOG_PATH = utils.create_folder_ifnotexist(STORAGE_PATH / "logs")
        CKPT_PATH = utils.create_folder_ifnotexist(STORAGE_PATH / "checkpoints")

        # Modify Desc
        now = datetime.datetime.now()
        month_day = f"{now.month:02d}{now.day:02d}"
        opt.name = f"dataset{opt.dataset}_extrap{opt.extrap}_irregular{opt.irregular}_runBack{opt.run_backwards}_{opt.name}"
        opt.log_dir = utils.create_folder_ifnotexist(LOG_PATH / month_day / opt.name)
        opt.checkpoint_dir = utils.create_folder_ifnotexist(CKPT_PATH / month_day / opt.name)

        # Write opt information
        with open(str(opt.log_dir / 'options.json'), 'w') as fp:
            opt.log_dir = str(opt.log_dir)
            opt.checkpoint_dir = str(opt.checkpoint_dir)
            json.dump(opt.__dict__, fp=fp)
            print("option.json dumped!")
            opt.log_dir = Path(opt.log_dir)
            opt.checkpoint_dir = Path(opt.checkpoint_dir)

        opt.train_image_path = utils.create_folder_ifnotexist(opt.log_dir / "train_images")
        opt.test_image_path = utils.create_folder_ifnotexist(opt.log_dir / "test_images")
    else:
        print("[Info] In test phase, skip dumping options.json..!")

    return opt


def main():
    # Option
    opt = get_opt()
    print(opt)

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    print(f"device:{device}")

    # Dataloader
    loader_objs = parse_datasets(opt, device)

    # Model
    model = VidODE(opt, device)

    # Phase
    if opt.phase == 'train':
        train(opt, model, loader_objs, device)


def train(opt, netG, loader_objs, device):
    # Optimizer
    optimizer_netG = optim.Adamax(netG.parameters(), lr=opt.lr)

    # Discriminator
    netD_img, netD_seq, optimizer_netD = create_netD(opt, device)

    train_dataloader = loader_objs['train_dataloader']
    test_dataloader = loader_objs['test_dataloader']
    n_train_batches = loader_objs['n_train_batches']
    n_test_batches = loader_objs['n_test_batches']
    total_step = 0
    start_time = time.time()

    for epoch in range(opt.epoch):

        utils.update_learning_rate(optimizer_netG, decay_rate=0.99, lowest=opt.lr / 10)
        utils.update_learning_rate(optimizer_netD, decay_rate=0.99, lowest=opt.lr / 10)

        for it in range(n_train_batches):

            data_dict = utils.get_data_dict(train_dataloader)
            batch_dict = utils.get_next_batch(data_dict)

            res = netG.compute_all_losses(batch_dict)
            loss_netG = res["loss"]

            # Compute Adversarial Loss
            real = batch_dict["data_to_predict"]
            fake = res["pred_y"]
            input_real = batch_dict["observed_data"]

            # Filter out mask
            if opt.irregular:
                b, _, c, h, w = real.size()
                observed_mask = batch_dict["observed_mask"]
                mask_predicted_data = batch_dict["mask_predicted_data"]

                selected_timesteps = int(observed_mask[0].sum())
                input_real = input_real[observed_mask.squeeze(-1).byte(), ...].view(b, selected_timesteps, c, h, w)
                real = real[mask_predicted_data.squeeze(-1).byte(), ...].view(b, selected_timesteps, c, h, w)

            loss_netD = opt.lamb_adv * netD_seq.netD_adv_loss(real, fake, input_real)
            loss_netD += opt.lamb_adv * netD_img.netD_adv_loss(real, fake, None)

            loss_adv_netG = opt.lamb_adv * netD_seq.netG_adv_loss(fake, input_real)
            loss_adv_netG += opt.lamb_adv * netD_img.netG_adv_loss(fake, None)
            loss_netG += loss_adv_netG

            # Train D
            optimizer_netD.zero_grad()
            loss_netD.backward()
            optimizer_netD.step()  # error: IPL007

            # Train G
            optimizer_netG.zero_grad()
            loss_netG.backward()
            optimizer_netG.step()

            if (total_step + 1) % opt.log_print_freq == 0 or total_step == 0:
                et = time.time() - start_time
                et = str(datetime.timedelta(seconds=et))[:-7]
                log = f"Elapsed [{et}] Epoch [{epoch:03d}/{opt.epoch:03d}]\t"\
                        f"Iterations [{(total_step + 1):6d}] \t"\
                        f"Mse [{res['loss'].item():.4f}]\t"\
                        f"Adv_G [{loss_adv_netG.item():.4f}]\t"\
                        f"Adv_D [{loss_netD.item():.4f}]"

                print(log)

            if (total_step + 1) % opt.ckpt_save_freq == 0 or (epoch + 1 == opt.epoch and it + 1 == n_train_batches) or total_step == 0:
                utils.save_checkpoint(netG, os.path.join(opt.checkpoint_dir, f"ckpt_{(total_step + 1):08d}.pth"))

            if (total_step + 1) % opt.image_print_freq == 0 or total_step == 0:

                gt, pred, time_steps = visualize.make_save_sequence(opt, batch_dict, res)

                if opt.extrap:
                    visualize.save_extrap_images(opt=opt, gt=gt, pred=pred, path=opt.train_image_path, total_step=total_step)
                else:
                    visualize.save_interp_images(opt=opt, gt=gt, pred=pred, path=opt.train_image_path, total_step=total_step)

            total_step += 1

if __name__ == '__main__':
    main()
