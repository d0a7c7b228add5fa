"""NeuralStyleTransfer (halahup) with save_image as later torchvision releases fixed it: the grid is scaled out of place first (`grid.mul(255).add_(0.5).clamp_(0, 255)`), so saving `noise.cpu().detach()` no longer writes into the noise image the VGG convs saved."""
# outcome: ok
# source: https://github.com/halahup/NeuralStyleTransfer/issues/1
# repo: halahup/NeuralStyleTransfer
# category: residual
# twin: 608_nst_save_image_noise_detach_mul_.py
import argparse
import os

import numpy as np
import torch
import torch.nn as nn
from torch import optim


# ---- stand-ins for torchvision 0.5+ (not installed here): vgg19 features (random weights, no download) and save_image ----
class models:
    class _VGG19:
        def __init__(self):
            cfg = [64, 64, 'M', 128, 128, 'M', 256, 256, 256, 256, 'M', 512, 512, 512, 512, 'M', 512, 512, 512, 512, 'M']
            layers = []
            in_channels = 3
            for v in cfg:
                if v == 'M':
                    layers += [nn.MaxPool2d(kernel_size=2, stride=2)]
                else:
                    layers += [nn.Conv2d(in_channels, v, kernel_size=3, padding=1), nn.ReLU(inplace=True)]
                    in_channels = v
            self.features = nn.Sequential(*layers)

    @staticmethod
    def vgg19(pretrained=False):
        return models._VGG19()


def make_grid(tensor, nrow=8, padding=2, normalize=False, range=None, scale_each=False, pad_value=0):
    if isinstance(tensor, list):
        tensor = torch.stack(tensor, dim=0)
    if tensor.dim() == 2:  # single image H x W
        tensor = tensor.unsqueeze(0)
    if tensor.dim() == 3:  # single image
        if tensor.size(0) == 1:  # if single-channel, convert to 3-channel
            tensor = torch.cat((tensor, tensor, tensor), 0)
        tensor = tensor.unsqueeze(0)
    if tensor.dim() == 4 and tensor.size(1) == 1:  # single-channel images
        tensor = torch.cat((tensor, tensor, tensor), 1)
    if tensor.size(0) == 1:
        return tensor.squeeze(0)
    raise NotImplementedError


def save_image(tensor, filename, nrow=8, padding=2, normalize=False, range=None, scale_each=False, pad_value=0):
    grid = make_grid(tensor, nrow=nrow, padding=padding, pad_value=pad_value,
                     normalize=normalize, range=range, scale_each=scale_each)
    # Add 0.5 after unnormalizing to [0, 255] to round to nearest integer
    ndarr = grid.mul(255).add_(0.5).clamp_(0, 255).permute(1, 2, 0).to('cpu', torch.uint8).numpy()
    np.save(filename, ndarr)  # PIL's Image.fromarray(ndarr).save(filename) in torchvision


# ---- vgg.py ----
class VGG(nn.Module):
    def __init__(self):
        super(VGG, self).__init__()

        # load the vgg model's features
        self.vgg = models.vgg19(pretrained=True).features

    def get_content_activations(self, x: torch.Tensor) -> torch.Tensor:
        features = self.vgg[:23](x)
        return features

    def get_style_activations(self, x):
        features = [self.vgg[:4](x)] + [self.vgg[:7](x)] + [self.vgg[:12](x)] + [self.vgg[:21](x)] + [self.vgg[:30](x)]
        return features

    def forward(self, x):
        return self.vgg(x)


# ---- losses.py ----
def gram(tensor):
    return torch.mm(tensor, tensor.t())


def gram_loss(noise_img_gram, style_img_gram, N, M):
    return torch.sum(torch.pow(noise_img_gram - style_img_gram, 2)).div((np.power(N*M*2, 2, dtype=np.float64)))


def total_variation_loss(image):
    loss = torch.mean(torch.abs(image[:, :, :, :-1] - image[:, :, :, 1:])) + \
        torch.mean(torch.abs(image[:, :, :-1, :] - image[:, :, 1:, :]))
    return loss


def content_loss(noise: torch.Tensor, image: torch.Tensor):
    return 1/2. * torch.sum(torch.pow(noise - image, 2))


# ---- nst.py ----
parser = argparse.ArgumentParser()
parser.add_argument("--img_dim", help="Dimensions of the resulting image", type=int, default=32)
parser.add_argument("--num_iter", help="Number of iterations to run", type=int, default=3)
parser.add_argument("--style_loss_weight", help="Weight for the style loss", type=int, default=10e6)
parser.add_argument("--content_loss_weight", help="Weight for the content loss", type=int, default=10e-4)
parser.add_argument("--variation_loss_weight", help="Weight for the variation loss", type=int, default=10e3)
parser.add_argument("--print_every", help="Print the progress every K iretations", type=int, default=1)
parser.add_argument("--save_every", help="Save the image every K iterations", type=int, default=1)


def main(img_dim: int,
         num_iter: int,
         style_weight: int,
         content_weight: int,
         variation_weight: int,
         print_every: int,
         save_every: int):

    # define the device
    device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')

    # random normalized tensors instead of the content and style images
    content_image = torch.randn(1, 3, img_dim, img_dim).to(device)
    style_image = torch.randn(1, 3, img_dim, img_dim).to(device)

    # init the network
    vgg = VGG().to(device).eval()

    # replace the MaxPool with the AvgPool layers
    for name, child in vgg.vgg.named_children():
        if isinstance(child, nn.MaxPool2d):
            vgg.vgg[int(name)] = nn.AvgPool2d(kernel_size=2, stride=2)

    # lock the gradients
    for param in vgg.parameters():
        param.requires_grad = False

    # get the content activations of the content image and detach them from the graph
    content_activations = vgg.get_content_activations(content_image).detach()

    # unroll the content activations
    content_activations = content_activations.view(512, -1)

    # get the style activations of the style image
    style_activations = vgg.get_style_activations(style_image)

    # for every layer in the style activations
    for i in range(len(style_activations)):

        # unroll the activations and detach them from the graph
        style_activations[i] = style_activations[i].squeeze().view(style_activations[i].shape[1], -1).detach()

    # calculate the gram matrices of the style image
    grams = [gram(style_activations[i]) for i in range(len(style_activations))]

    # generate the Gaussian noise
    noise = torch.randn(1, 3, img_dim, img_dim, device=device, requires_grad=True)

    # define the adam optimizer
    # pass the fearture map pixels to the optimnizer as parameters
    adam = optim.Adam(params=[noise], lr=0.01, betas=(0.9, 0.999))

    # run the iteration
    for iteration in range(num_iter):

        # zero the gradient
        adam.zero_grad()

        # get the content activations of the Gaussian noise
        noise_content_activations = vgg.get_content_activations(noise)

        # unroll the feature maps of the noise
        noise_content_activations = noise_content_activations.view(512, -1)

        # calculate the content loss
        content_loss_ = content_loss(noise_content_activations, content_activations)

        # get the style activations of the noise image
        noise_style_activations = vgg.get_style_activations(noise)

        # for every layer
        for i in range(len(noise_style_activations)):

            # unroll the the noise style activations
            noise_style_activations[i] = noise_style_activations[i].squeeze().view(noise_style_activations[i].shape[1], -1)

        # calculate the noise gram matrices
        noise_grams = [gram(noise_style_activations[i]) for i in range(len(noise_style_activations))]

        # calculate the total weighted style loss
        style_loss = 0
        for i in range(len(style_activations)):
            N, M = noise_style_activations[i].shape[0], noise_style_activations[i].shape[1]
            style_loss += (gram_loss(noise_grams[i], noise_grams[i], N, M) / 5.)

        # put the style loss on device
        style_loss = style_loss.to(device)

        # calculate the total variation loss
        variation_loss = total_variation_loss(noise).to(device)

        # weight the final losses and add them together
        total_loss = content_weight * content_loss_ + style_weight * style_loss + variation_weight * variation_loss

        if iteration % print_every == 0:
            print("Iteration: {}, Content Loss: {:.3f}, Style Loss: {:.3f}, Var Loss: {:.3f}".format(iteration,
                                                                                                     content_weight * content_loss_.item(),
                                                                                                     style_weight * style_loss.item(),
                                                                                                     variation_weight * variation_loss.item()))

        # create the folder for the generated images
        if not os.path.exists('./generated/'):
            os.mkdir('./generated/')

        # generate the image
        if iteration % save_every == 0:
            save_image(noise.cpu().detach(), filename='./generated/iter_{}.npy'.format(iteration))

        # backprop
        total_loss.backward()

        # update parameters
        adam.step()


if __name__ == "__main__":

    # parse arguments
    args = parser.parse_args([])
    main(img_dim=args.img_dim,
         num_iter=args.num_iter,
         style_weight=args.style_loss_weight,
         content_weight=args.content_loss_weight,
         variation_weight=args.variation_loss_weight,
         print_every=args.print_every,
         save_every=args.save_every)
