"""DIRT-T VADA training, fixed: the discriminator update moves up, right after its loss is built, so the domain loss goes through the already-stepped discriminator."""
# outcome: ok
# source: https://github.com/ozanciga/dirt-t/issues/3
# repo: ozanciga/dirt-t
# category: trainer
# twin: b060_dirt_t_vada_disc_step_before_main_backward.py
import argparse

import numpy as np
import torch
from torch import nn
import torch.nn.functional as F

# myargs.py
parser = argparse.ArgumentParser()
parser.add_argument('--lr', type=float, default=1e-3)
parser.add_argument('--beta1', type=float, default=0.5)
parser.add_argument('--beta2', type=float, default=0.999)
parser.add_argument('--num_epoch', type=int, default=3)
parser.add_argument('--large', type=bool, default=False)
parser.add_argument('--classes', type=int, default=10)
parser.add_argument('--gaussian_noise', type=float, default=1.0)
parser.add_argument('--n_power', type=int, default=1)
parser.add_argument('--radius', type=float, default=3.5)
args = parser.parse_args([])


# models.py
class GaussianNoise(nn.Module):
    def __init__(self, sigma=1.0):
        super().__init__()
        self.sigma = sigma
        self.noise = torch.tensor(0.0)

    def forward(self, x):
        if self.training:
            sampled_noise = self.noise.repeat(*x.size()).normal_(mean=0, std=self.sigma)
            x = x + sampled_noise
        return x


class Classifier(nn.Module):
    def __init__(self, large=False):
        super(Classifier, self).__init__()

        n_features = 12 if large else 4

        self.feature_extractor = nn.Sequential(
            nn.InstanceNorm2d(3, momentum=1, eps=1e-3),
            nn.Conv2d(3, n_features, 3, 1, 1),
            nn.BatchNorm2d(n_features, momentum=0.99, eps=1e-3),
            nn.LeakyReLU(negative_slope=0.1, inplace=True),
            nn.Conv2d(n_features, n_features, 3, 1, 1),
            nn.BatchNorm2d(n_features, momentum=0.99, eps=1e-3),
            nn.LeakyReLU(negative_slope=0.1, inplace=True),
            nn.MaxPool2d(2),
            nn.Dropout(0.5),
            GaussianNoise(args.gaussian_noise),
            nn.Conv2d(n_features, n_features, 3, 1, 1),
            nn.BatchNorm2d(n_features, momentum=0.99, eps=1e-3),
            nn.LeakyReLU(negative_slope=0.1, inplace=True),
            nn.MaxPool2d(2),
            nn.Dropout(0.5),
            GaussianNoise(args.gaussian_noise),
        )

        self.classifier = nn.Sequential(
            nn.Conv2d(n_features, n_features, 3, 1, 1),
            nn.BatchNorm2d(n_features, momentum=0.99, eps=1e-3),
            nn.LeakyReLU(negative_slope=0.1, inplace=True),
            nn.AdaptiveAvgPool2d(1),
            nn.Conv2d(n_features, args.classes, 1)
        )

        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode='fan_out', nonlinearity='relu')
            elif isinstance(m, (nn.BatchNorm2d, nn.GroupNorm)):
                nn.init.constant_(m.weight, 1)
                nn.init.constant_(m.bias, 0)
                m.track_running_stats = False

    def track_bn_stats(self, track):
        for m in self.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.track_running_stats = track

    def forward(self, x, track_bn=False):

        if track_bn:
            self.track_bn_stats(True)

        features = self.feature_extractor(x)
        logits = self.classifier(features)

        if track_bn:
            self.track_bn_stats(False)

        return features, logits.view(x.size(0), 10)


class Discriminator(nn.Module):
    def __init__(self, large=False):
        super(Discriminator, self).__init__()

        n_features = 12 if large else 4

        self.disc = nn.Sequential(
            nn.Linear(n_features * 1 * 4 * 4, 10),
            nn.ReLU(True),
            nn.Linear(10, 1)
        )

    def forward(self, x):
        x = x.view(x.size(0), -1)
        return self.disc(x).view(x.size(0), -1)


class EMA:
    def __init__(self, decay):
        self.decay = decay
        self.shadow = {}

    def register(self, model):
        for name, param in model.named_parameters():
            if param.requires_grad:
                self.shadow[name] = param.data.clone()
        self.params = self.shadow.keys()

    def __call__(self, model):
        if self.decay > 0:
            for name, param in model.named_parameters():
                if name in self.params and param.requires_grad:
                    self.shadow[name] -= (1 - self.decay) * (self.shadow[name] - param.data)
                    param.data = self.shadow[name]


# vat.py
class ConditionalEntropyLoss(torch.nn.Module):
    def __init__(self):
        super(ConditionalEntropyLoss, self).__init__()

    def forward(self, x):
        b = F.softmax(x, dim=1) * F.log_softmax(x, dim=1)
        b = b.sum(dim=1)
        return -1.0 * b.mean(dim=0)


class VAT(nn.Module):
    def __init__(self, model):
        super(VAT, self).__init__()
        self.n_power = args.n_power
        self.XI = 1e-6
        self.model = model
        self.epsilon = args.radius

    def forward(self, X, logit):
        vat_loss = self.virtual_adversarial_loss(X, logit)
        return vat_loss

    def generate_virtual_adversarial_perturbation(self, x, logit):
        d = torch.randn_like(x)

        for _ in range(self.n_power):
            d = self.XI * self.get_normalized_vector(d).requires_grad_()
            _, logit_m = self.model(x + d)
            dist = self.kl_divergence_with_logit(logit, logit_m)
            grad = torch.autograd.grad(dist, [d])[0]
            d = grad.detach()

        return self.epsilon * self.get_normalized_vector(d)

    def kl_divergence_with_logit(self, q_logit, p_logit):
        q = F.softmax(q_logit, dim=1)
        qlogq = torch.mean(torch.sum(q * F.log_softmax(q_logit, dim=1), dim=1))
        qlogp = torch.mean(torch.sum(q * F.log_softmax(p_logit, dim=1), dim=1))
        return qlogq - qlogp

    def get_normalized_vector(self, d):
        return F.normalize(d.view(d.size(0), -1), p=2, dim=1).reshape(d.size())

    def virtual_adversarial_loss(self, x, logit):
        r_vadv = self.generate_virtual_adversarial_perturbation(x, logit)
        logit_p = logit.detach()
        _, logit_m = self.model(x + r_vadv)
        loss = self.kl_divergence_with_logit(logit_p, logit_m)
        return loss


# vada_train.py
# discriminator network
feature_discriminator = Discriminator(large=args.large)

# classifier network.
classifier = Classifier(large=args.large)

# loss functions
cent = ConditionalEntropyLoss()
xent = nn.CrossEntropyLoss(reduction='mean')
sigmoid_xent = nn.BCEWithLogitsLoss(reduction='mean')
vat_loss = VAT(classifier)

# optimizer.
optimizer_cls = torch.optim.Adam(classifier.parameters(), lr=args.lr, betas=(args.beta1, args.beta2))
optimizer_disc = torch.optim.Adam(feature_discriminator.parameters(), lr=args.lr, betas=(args.beta1, args.beta2))

# datasets (random source / target batches in place of the digit loaders).
iterator_train = [(torch.randn(4, 3, 16, 16), torch.randint(0, 10, (4,)),
                   torch.randn(4, 3, 16, 16), torch.randint(0, 10, (4,))) for _ in range(2)]

# loss params.
dw = 1e-2
cw = 1
sw = 1
tw = 1e-2
bw = 1e-2


''' Exponential moving average (simulating teacher model) '''
ema = EMA(0.998)
ema.register(classifier)

# training..
for epoch in range(1, args.num_epoch):
    loss_main_sum, n_total = 0, 0

    for images_source, labels_source, images_target, labels_target in iterator_train:

        # pass images through the classifier network.
        feats_source, pred_source = classifier(images_source)
        feats_target, pred_target = classifier(images_target, track_bn=True)

        ' Discriminator losses setup. '
        # discriminator loss.
        real_logit_disc = feature_discriminator(feats_source.detach())
        fake_logit_disc = feature_discriminator(feats_target.detach())

        loss_disc = 0.5 * (
                sigmoid_xent(real_logit_disc, torch.ones_like(real_logit_disc)) +
                sigmoid_xent(fake_logit_disc, torch.zeros_like(fake_logit_disc))
        )

        # Update discriminator.
        optimizer_disc.zero_grad()
        loss_disc.backward()
        optimizer_disc.step()

        ' Classifier losses setup. '
        # supervised/source classification.
        loss_src_class = xent(pred_source, labels_source)

        # conditional entropy loss.
        loss_trg_cent = cent(pred_target)

        # virtual adversarial loss.
        loss_src_vat = vat_loss(images_source, pred_source)
        loss_trg_vat = vat_loss(images_target, pred_target)

        # domain loss.
        real_logit = feature_discriminator(feats_source)
        fake_logit = feature_discriminator(feats_target)

        loss_domain = 0.5 * (
                sigmoid_xent(real_logit, torch.zeros_like(real_logit)) +
                sigmoid_xent(fake_logit, torch.ones_like(fake_logit))
        )

        # combined loss.
        loss_main = (
                dw * loss_domain +
                cw * loss_src_class +
                sw * loss_src_vat +
                tw * loss_trg_cent +
                tw * loss_trg_vat
        )

        ' Update network(s) '

        # Update classifier.
        optimizer_cls.zero_grad()
        loss_main.backward()
        optimizer_cls.step()

        # Polyak averaging.
        ema(classifier)

        loss_main_sum += loss_main.item()
        n_total += 1

    print('({}) loss {:.3f}'.format(epoch, loss_main_sum / n_total))
