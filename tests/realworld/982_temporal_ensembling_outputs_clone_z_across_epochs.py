"""temporal-ensembling (ferretj): each batch's outputs stored with `outputs[i*bs:(i+1)*bs] = out.data.clone()` before backward, the ensemble Z/z rebuilt after every epoch and read back as a detached target in the next epoch's temporal_loss; GaussianNoise refills a buffer with `.data.normal_` each forward."""
# outcome: ok
# source: https://github.com/ferretj/temporal-ensembling/blob/master/temporal_ensembling.py
# repo: ferretj/temporal-ensembling
# category: iteration
import numpy as np
from timeit import default_timer as timer
import torch
from torch.autograd import Variable
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils import weight_norm


# ---- utils.py ----
class GaussianNoise(nn.Module):

    def __init__(self, batch_size, input_shape=(1, 28, 28), std=0.05):
        super(GaussianNoise, self).__init__()
        self.shape = (batch_size,) + input_shape
        self.noise = Variable(torch.zeros(self.shape))
        self.std = std

    def forward(self, x):
        self.noise.data.normal_(0, std=self.std)
        return x + self.noise


def prepare_mnist(n=12):
    # random MNIST-sized data instead of torchvision.datasets.MNIST (no download)
    images = torch.randn(n, 1, 28, 28)
    labels = torch.randint(0, 10, (n,))
    return list(zip(images, labels)), list(zip(images[:4], labels[:4]))


def ramp_up(epoch, max_epochs, max_val, mult):
    if epoch == 0:
        return 0.
    elif epoch >= max_epochs:
        return max_val
    return max_val * np.exp(mult * (1. - float(epoch) / max_epochs) ** 2)


def weight_schedule(epoch, max_epochs, max_val, mult, n_labeled, n_samples):
    max_val = max_val * (float(n_labeled) / n_samples)
    return ramp_up(epoch, max_epochs, max_val, mult)


# ---- mnist_eval.py ----
class CNN(nn.Module):

    def __init__(self, batch_size, std, p=0.5, fm1=16, fm2=32):
        super(CNN, self).__init__()
        self.fm1   = fm1
        self.fm2   = fm2
        self.std   = std
        self.gn    = GaussianNoise(batch_size, std=self.std)
        self.act   = nn.ReLU()
        self.drop  = nn.Dropout(p)
        self.conv1 = weight_norm(nn.Conv2d(1, self.fm1, 3, padding=1))
        self.conv2 = weight_norm(nn.Conv2d(self.fm1, self.fm2, 3, padding=1))
        self.mp    = nn.MaxPool2d(3, stride=2, padding=1)
        self.fc    = nn.Linear(self.fm2 * 7 * 7, 10)

    def forward(self, x):
        if self.training:
            x = self.gn(x)
        x = self.act(self.mp(self.conv1(x)))
        x = self.act(self.mp(self.conv2(x)))
        x = x.view(-1, self.fm2 * 7 * 7)
        x = self.drop(x)
        x = self.fc(x)
        return x


# ---- temporal_ensembling.py ----
def sample_train(train_dataset, test_dataset, batch_size, k, n_classes,
                 seed, shuffle_train=True, return_idxs=True):
    # the first k samples keep their labels, the others get -1 (unlabeled), as sample_train does per class
    images = torch.stack([im for im, _ in train_dataset])
    labels = torch.stack([lb for _, lb in train_dataset])
    labels[k:] = -1
    train_loader = [(images[i:i + batch_size], labels[i:i + batch_size]) for i in range(0, len(images), batch_size)]
    test_loader = [(torch.stack([im for im, _ in test_dataset]), torch.stack([lb for _, lb in test_dataset]))]
    if return_idxs:
        return train_loader, test_loader, torch.arange(k)
    return train_loader, test_loader


def temporal_loss(out1, out2, w, labels):

    # MSE between current and temporal outputs
    def mse_loss(out1, out2):
        quad_diff = torch.sum((F.softmax(out1, dim=1) - F.softmax(out2, dim=1)) ** 2)
        return quad_diff / out1.data.nelement()

    def masked_crossentropy(out, labels):
        cond = (labels >= 0)
        nnz = torch.nonzero(cond)
        nbsup = len(nnz)
        # check if labeled samples in batch, return 0 if none
        if nbsup > 0:
            masked_outputs = torch.index_select(out, 0, nnz.view(nbsup))
            masked_labels = labels[cond]
            loss = F.cross_entropy(masked_outputs, masked_labels)
            return loss, nbsup
        return Variable(torch.FloatTensor([0.]), requires_grad=False), 0

    sup_loss, nbsup = masked_crossentropy(out1, labels)
    unsup_loss = mse_loss(out1, out2)
    return sup_loss + w * unsup_loss, sup_loss, unsup_loss, nbsup


def train(model, seed, k=6, alpha=0.6, lr=0.002, beta2=0.99, num_epochs=2,
          batch_size=4, drop=0.5, std=0.15, fm1=16, fm2=32,
          divide_by_bs=False, w_norm=False, data_norm='pixelwise',
          early_stop=None, c=300, n_classes=10, max_epochs=80,
          max_val=30., ramp_up_mult=-5., n_samples=60000,
          print_res=True, **kwargs):

    # retrieve data
    train_dataset, test_dataset = prepare_mnist()
    ntrain = len(train_dataset)

    # make data loaders
    train_loader, test_loader, indices = sample_train(train_dataset, test_dataset, batch_size,
                                                      k, n_classes, seed, shuffle_train=False)

    # setup param optimization
    optimizer = torch.optim.Adam(model.parameters(), lr=lr, betas=(0.9, 0.99))

    # train
    model.train()
    losses = []
    sup_losses = []
    unsup_losses = []
    best_loss = 20.

    Z = torch.zeros(ntrain, n_classes).float()        # intermediate values
    z = torch.zeros(ntrain, n_classes).float()        # temporal outputs
    outputs = torch.zeros(ntrain, n_classes).float()  # current outputs

    for epoch in range(num_epochs):
        t = timer()

        # evaluate unsupervised cost weight
        w = weight_schedule(epoch, max_epochs, max_val, ramp_up_mult, k, n_samples)

        # turn it into a usable pytorch object
        w = torch.autograd.Variable(torch.FloatTensor([w]), requires_grad=False)

        l = []
        supl = []
        unsupl = []
        for i, (images, labels) in enumerate(train_loader):
            images = Variable(images)
            labels = Variable(labels, requires_grad=False)

            # get output and calculate loss
            optimizer.zero_grad()
            out = model(images)
            zcomp = Variable(z[i * batch_size: (i + 1) * batch_size], requires_grad=False)
            loss, suploss, unsuploss, nbsup = temporal_loss(out, zcomp, w, labels)

            # save outputs and losses
            outputs[i * batch_size: (i + 1) * batch_size] = out.data.clone()
            l.append(loss.item())
            supl.append(nbsup * suploss.item())
            unsupl.append(unsuploss.item())

            # backprop
            loss.backward()
            optimizer.step()

        # update temporal ensemble
        Z = alpha * Z + (1. - alpha) * outputs
        z = Z * (1. / (1. - alpha ** (epoch + 1)))

        # handle metrics, losses, etc.
        eloss = np.mean(l)
        losses.append(eloss)
        sup_losses.append((1. / k) * np.sum(supl))  # division by 1/k to obtain the mean supervised loss
        unsup_losses.append(np.mean(unsupl))
        print('Epoch [%d/%d], Loss: %.6f, Time (this epoch): %.2f s' % (epoch + 1, num_epochs, eloss, timer() - t))

    return losses, sup_losses, unsup_losses, indices


if __name__ == '__main__':
    torch.manual_seed(0)
    model = CNN(4, 0.15)
    train(model, 0)
