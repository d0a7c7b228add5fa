"""High-Resolution-Image-Inpainting-GAN WGAN_trainer: first_MaskL1Loss.backward(retain_graph=True) and optimizer_g1.step() update the coarse generator, then the total generator loss (which still holds first_MaskL1Loss and second_MaskL1Loss, both built through the coarse net) is backwarded."""
# outcome: inplace-error
# source: https://github.com/wangyx240/High-Resolution-Image-Inpainting-GAN/issues/7
# repo: wangyx240/High-Resolution-Image-Inpainting-GAN
# category: trainer
# twin: 719_hr_inpainting_g1_step_before_total_loss_backward_fixed.py
import argparse
import os
import time
import datetime
import numpy as np
import torch
import torch.nn as nn
import torch.backends.cudnn as cudnn
from torch.utils.data import DataLoader
from torch.nn import functional as F


# ---- stand-ins for inpainting_network.GatedGenerator / PatchDiscriminator / PerceptualNet (small conv nets with
# the same structure: a `coarse` sub-network, then a refinement network on the coarse result; the perceptual net is
# frozen) and for dataset.InpaintDataset (random images and masks) ----
class Coarse(nn.Module):
    def __init__(self, opt):
        super(Coarse, self).__init__()
        self.coarse1 = nn.Sequential(nn.Conv2d(4, opt.latent_channels, 3, 1, 1), nn.ELU())
        self.coarse2 = nn.Sequential(nn.Conv2d(opt.latent_channels, opt.latent_channels, 3, 1, 1), nn.ELU())
        self.coarse9 = nn.Sequential(nn.Conv2d(opt.latent_channels, 3, 3, 1, 1), nn.Sigmoid())

    def forward(self, first_in):
        first_out = self.coarse1(first_in)
        first_out = self.coarse2(first_out) + first_out
        first_out = self.coarse9(first_out)  # saved-by
        return first_out


class GatedGenerator(nn.Module):
    def __init__(self, opt):
        super(GatedGenerator, self).__init__()
        self.coarse = Coarse(opt)
        self.refinement1 = nn.Sequential(nn.Conv2d(4, opt.latent_channels, 3, 1, 1), nn.ELU())
        self.refinement9 = nn.Sequential(nn.Conv2d(opt.latent_channels, 3, 3, 1, 1), nn.Sigmoid())

    def forward(self, img, mask):
        img_256 = img
        mask_256 = mask
        first_masked_img = img_256 * (1 - mask_256) + mask_256
        first_in = torch.cat((first_masked_img, mask_256), 1)
        first_out = self.coarse(first_in)
        second_masked_img = img * (1 - mask) + first_out * mask
        second_in = torch.cat((second_masked_img, mask), 1)
        second_out = self.refinement9(self.refinement1(second_in))
        return first_out, second_out


class PatchDiscriminator(nn.Module):
    def __init__(self, opt):
        super(PatchDiscriminator, self).__init__()
        self.block1 = nn.Sequential(nn.Conv2d(4, opt.latent_channels, 4, 2, 1), nn.LeakyReLU(0.2))
        self.block2 = nn.Conv2d(opt.latent_channels, 1, 4, 2, 1)

    def forward(self, img, mask):
        x = torch.cat((img, mask), 1)
        return self.block2(self.block1(x))


class PerceptualNet(nn.Module):
    def __init__(self):
        super(PerceptualNet, self).__init__()
        self.features = nn.Sequential(nn.Conv2d(3, 8, 3, 1, 1), nn.ReLU(inplace=True), nn.Conv2d(8, 8, 3, 1, 1))

    def forward(self, x):
        return self.features(x)


class utils:
    @staticmethod
    def create_generator(opt):
        return GatedGenerator(opt)

    @staticmethod
    def create_discriminator(opt):
        return PatchDiscriminator(opt)

    @staticmethod
    def create_perceptualnet():
        perceptualnet = PerceptualNet()
        for param in perceptualnet.parameters():
            param.requires_grad = False
        return perceptualnet


class InpaintDataset(torch.utils.data.Dataset):
    def __init__(self, opt):
        self.opt = opt

    def __len__(self):
        return 4

    def __getitem__(self, index):
        img = torch.rand(3, self.opt.imgsize, self.opt.imgsize)
        mask = (torch.rand(1, self.opt.imgsize, self.opt.imgsize) > 0.7).float()
        return img, mask


class dataset:
    InpaintDataset = InpaintDataset


# ---- trainer.py ----
def WGAN_trainer(opt):
    # ----------------------------------------
    #      Initialize training parameters
    # ----------------------------------------

    # cudnn benchmark accelerates the network
    cudnn.benchmark = opt.cudnn_benchmark

    # configurations
    save_folder = opt.save_path
    sample_folder = opt.sample_path

    # Build networks
    generator = utils.create_generator(opt)
    discriminator = utils.create_discriminator(opt)
    perceptualnet = utils.create_perceptualnet()

    # To device
    if opt.multi_gpu == True:
        generator = nn.DataParallel(generator)
        discriminator = nn.DataParallel(discriminator)
        generator = generator.cuda()
        discriminator = discriminator.cuda()
        perceptualnet = nn.DataParallel(perceptualnet)
        perceptualnet = perceptualnet.cuda()
    else:
        generator = generator  # .cuda() in the original
        discriminator = discriminator
        perceptualnet = perceptualnet

    # Loss functions
    L1Loss = nn.L1Loss()#reduce=False, size_average=False)
    RELU = nn.ReLU()

    # Optimizers
    optimizer_g1 = torch.optim.Adam(generator.coarse.parameters(), lr=opt.lr_g)
    optimizer_g = torch.optim.Adam(generator.parameters(), lr=opt.lr_g)
    optimizer_d = torch.optim.Adam(discriminator.parameters(), lr = opt.lr_d)

    # Learning rate decrease
    def adjust_learning_rate(lr_in, optimizer, epoch, opt):
        """Set the learning rate to the initial LR decayed by "lr_decrease_factor" every "lr_decrease_epoch" epochs"""
        lr = lr_in * (opt.lr_decrease_factor ** (epoch // opt.lr_decrease_epoch))
        for param_group in optimizer.param_groups:
            param_group['lr'] = lr
    
    # Save the model if pre_train == True
    def save_model(net, epoch, opt, batch=0, is_D=False):
        """Save the model at "checkpoint_interval" and its multiple"""
        if is_D==True:
            model_name = 'discriminator_WGAN_epoch%d_batch%d.pth' % (epoch + 1, batch)
        else:
            model_name = 'deepfillv2_WGAN_epoch%d_batch%d.pth' % (epoch+1, batch)
        model_name = os.path.join(save_folder, model_name)
        if opt.multi_gpu == True:
            if epoch % opt.checkpoint_interval == 0:
                torch.save(net.module.state_dict(), model_name)
                print('The trained model is successfully saved at epoch %d batch %d' % (epoch, batch))
        else:
            if epoch % opt.checkpoint_interval == 0:
                torch.save(net.state_dict(), model_name)
                print('The trained model is successfully saved at epoch %d batch %d' % (epoch, batch))
    
    # ----------------------------------------
    #       Initialize training dataset
    # ----------------------------------------

    # Define the dataset
    trainset = dataset.InpaintDataset(opt)
    print('The overall number of images equals to %d' % len(trainset))

    # Define the dataloader
    dataloader = DataLoader(trainset, batch_size = opt.batch_size, shuffle = True, num_workers = opt.num_workers, pin_memory = False)
    
    # ----------------------------------------
    #            Training and Testing
    # ----------------------------------------

    # Initialize start time
    prev_time = time.time()

    # Training loop
    for epoch in range(opt.epochs):
        print("Start epoch ", epoch+1, "!")
        for batch_idx, (img, mask) in enumerate(dataloader):

            # Load mask (shape: [B, 1, H, W]), masked_img (shape: [B, 3, H, W]), img (shape: [B, 3, H, W]) and put it to cuda
            img = img  # .cuda() in the original
            mask = mask

            # Generator output
            first_out, second_out = generator(img, mask)

            # forward propagation
            first_out_wholeimg = img * (1 - mask) + first_out * mask        # in range [0, 1]
            second_out_wholeimg = img * (1 - mask) + second_out * mask      # in range [0, 1]

            for wk in range(1):
                optimizer_d.zero_grad()
                fake_scalar = discriminator(second_out_wholeimg.detach(), mask)
                true_scalar = discriminator(img, mask)
                #W_Loss = -torch.mean(true_scalar) + torch.mean(fake_scalar)#+ gradient_penalty(discriminator, img, second_out_wholeimg, mask)
                hinge_loss = torch.mean(RELU(1-true_scalar)) + torch.mean(RELU(fake_scalar+1))
                loss_D = hinge_loss
                loss_D.backward(retain_graph=True)
                optimizer_d.step()

            ### Train Generator
            # Mask L1 Loss
            first_MaskL1Loss = L1Loss(first_out_wholeimg, img)
            second_MaskL1Loss = L1Loss(second_out_wholeimg, img)
            # GAN Loss
            fake_scalar = discriminator(second_out_wholeimg, mask)
            GAN_Loss = - torch.mean(fake_scalar)

            optimizer_g1.zero_grad()
            first_MaskL1Loss.backward(retain_graph=True)
            optimizer_g1.step()  # error: IPL007

            optimizer_g.zero_grad()

            # Get the deep semantic feature maps, and compute Perceptual Loss
            img_featuremaps = perceptualnet(img)  # feature maps
            second_out_wholeimg_featuremaps = perceptualnet(second_out_wholeimg)
            second_PerceptualLoss = L1Loss(second_out_wholeimg_featuremaps, img_featuremaps)

            loss = 0.5*opt.lambda_l1 * first_MaskL1Loss + opt.lambda_l1 * second_MaskL1Loss + GAN_Loss + second_PerceptualLoss * opt.lambda_perceptual
            loss.backward()

            optimizer_g.step()

            # Determine approximate time left
            batches_done = epoch * len(dataloader) + batch_idx
            batches_left = opt.epochs * len(dataloader) - batches_done
            time_left = datetime.timedelta(seconds=batches_left * (time.time() - prev_time))
            prev_time = time.time()
            # Print log
            print("\r[Epoch %d/%d] [Batch %d/%d] [first Mask L1 Loss: %.5f] [second Mask L1 Loss: %.5f]" %
                  ((epoch + 1), opt.epochs, (batch_idx+1), len(dataloader), first_MaskL1Loss.item(),
                   second_MaskL1Loss.item()))
            print("\r[D Loss: %.5f] [Perceptual Loss: %.5f] [G Loss: %.5f] time_left: %s" %
                  (loss_D.item(), second_PerceptualLoss.item(), GAN_Loss.item(), time_left))



            if (batch_idx + 1) % 100 ==0:

                # Generate Visualization image
                masked_img = img * (1 - mask) + mask
                img_save = torch.cat((img, masked_img, first_out, second_out, first_out_wholeimg, second_out_wholeimg),3)
                # Recover normalization: * 255 because last layer is sigmoid activated
                img_save = F.interpolate(img_save, scale_factor=0.5)
                img_save = img_save * 255
                # Process img_copy and do not destroy the data of img
                img_copy = img_save.clone().data.permute(0, 2, 3, 1)[0, :, :, :].cpu().numpy()
                #img_copy = np.clip(img_copy, 0, 255)
                img_copy = img_copy.astype(np.uint8)
                save_img_name = 'sample_batch' + str(batch_idx+1) + '.png'
                save_img_path = os.path.join(sample_folder, save_img_name)
                img_copy = cv2.cvtColor(img_copy, cv2.COLOR_RGB2BGR)
                cv2.imwrite(save_img_path, img_copy)
            if (batch_idx + 1) % 5000 == 0:
                save_model(generator, epoch, opt, batch_idx+1)
                save_model(discriminator, epoch, opt, batch_idx+1, is_D=True)


        #Learning rate decrease
        adjust_learning_rate(opt.lr_g, optimizer_g, (epoch + 1), opt)
        adjust_learning_rate(opt.lr_d, optimizer_d, (epoch + 1), opt)

        # Save the model
        # save_model(generator, epoch, opt) ... (nothing written here)


# ---- train.py (the options the trainer reads; shrunk sizes) ----
if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument('--save_path', type = str, default = './models', help = 'saving path that is a folder')
    parser.add_argument('--sample_path', type = str, default = './samples', help = 'training samples path that is a folder')
    parser.add_argument('--multi_gpu', type = bool, default = False, help = 'nn.Parallel needs or not')
    parser.add_argument('--cudnn_benchmark', type = bool, default = True, help = 'True for unchanged input data type')
    parser.add_argument('--checkpoint_interval', type = int, default = 1, help = 'interval between model checkpoints')
    parser.add_argument('--epochs', type = int, default = 2, help = 'number of epochs of training')
    parser.add_argument('--batch_size', type = int, default = 2, help = 'size of the batches')
    parser.add_argument('--lr_g', type = float, default = 1e-4, help = 'Adam: learning rate')
    parser.add_argument('--lr_d', type = float, default = 4e-4, help = 'Adam: learning rate')
    parser.add_argument('--lr_decrease_epoch', type = int, default = 10, help = 'lr decrease at certain epoch and its multiple')
    parser.add_argument('--lr_decrease_factor', type = float, default = 0.5, help = 'lr decrease factor, for classification default 0.1')
    parser.add_argument('--lambda_l1', type = float, default = 256, help = 'the parameter of L1Loss')
    parser.add_argument('--lambda_perceptual', type = float, default = 100, help = 'the parameter of FML1Loss (perceptual loss)')
    parser.add_argument('--num_workers', type = int, default = 0, help = 'number of cpu threads to use during batch generation')
    parser.add_argument('--latent_channels', type = int, default = 8, help = 'latent channels')
    parser.add_argument('--imgsize', type = int, default = 16, help = 'size of image')
    opt = parser.parse_args([])
    WGAN_trainer(opt)
