"""AdvGAN_Attack.train_batch with G_number_of_steps_per_batch > 1, as fixed in the thread: each G step recomputes perturbation and adv_images from the current G before its loss."""
# outcome: ok
# source: https://github.com/GiorgosKarantonis/Adversarial-Attacks-with-Relativistic-AdvGAN/issues/8
# repo: GiorgosKarantonis/Adversarial-Attacks-with-Relativistic-AdvGAN
# category: trainer
# twin: 973_relativistic_advgan_n_steps_g_reuse_adv_images.py
import torch
import torch.nn as nn
import torch.nn.functional as F


# ---- models.py (MNIST shapes) ----
class MNIST_target_net(nn.Module):
    def __init__(self):
        super(MNIST_target_net, self).__init__()
        self.conv1 = nn.Conv2d(1, 32, kernel_size=3)
        self.conv2 = nn.Conv2d(32, 32, kernel_size=3)
        self.conv3 = nn.Conv2d(32, 64, kernel_size=3)
        self.conv4 = nn.Conv2d(64, 64, kernel_size=3)

        self.fc1 = nn.Linear(64*4*4, 200)
        self.fc2 = nn.Linear(200, 200)
        self.logits = nn.Linear(200, 10)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = F.relu(self.conv2(x))
        x = F.max_pool2d(x, 2)
        x = F.relu(self.conv3(x))
        x = F.relu(self.conv4(x))
        x = F.max_pool2d(x, 2)
        x = x.view(-1, 64*4*4)
        x = F.relu(self.fc1(x))
        x = F.dropout(x, 0.5)
        x = F.relu(self.fc2(x))
        x = self.logits(x)
        return x


class Discriminator(nn.Module):
    def __init__(self, image_nc):
        super(Discriminator, self).__init__()
        # MNIST: 1*28*28
        model = [
            nn.Conv2d(image_nc, 8, kernel_size=4, stride=2, padding=0, bias=True),
            nn.LeakyReLU(0.2),
            # 8*13*13
            nn.Conv2d(8, 16, kernel_size=4, stride=2, padding=0, bias=True),
            nn.BatchNorm2d(16),
            nn.LeakyReLU(0.2),
            # 16*5*5
            nn.Conv2d(16, 32, kernel_size=4, stride=2, padding=0, bias=True),
            nn.BatchNorm2d(32),
            nn.LeakyReLU(0.2),
            nn.Conv2d(32, 1, 1),
            # 32*1*1
        ]

        self.model = nn.Sequential(*model)
        self.sigmoid = nn.Sigmoid()

    def forward(self, x):
        logits = self.model(x)
        output = self.sigmoid(logits).squeeze()
        return logits, output


class Generator(nn.Module):
    def __init__(self, gen_input_nc, image_nc, target='Auto'):
        super(Generator, self).__init__()

        encoder_lis = [
            # MNIST:1*28*28
            nn.Conv2d(gen_input_nc, 8, kernel_size=3, stride=1, padding=0, bias=True),
            nn.InstanceNorm2d(8),
            nn.ReLU(),
            # 8*26*26
            nn.Conv2d(8, 16, kernel_size=3, stride=2, padding=0, bias=True),
            nn.InstanceNorm2d(16),
            nn.ReLU(),
            # 16*12*12
            nn.Conv2d(16, 32, kernel_size=3, stride=2, padding=0, bias=True),
            nn.InstanceNorm2d(32),
            nn.ReLU(),
            # 32*5*5
        ]

        bottle_neck_lis = [ResnetBlock(32),
                       ResnetBlock(32),
                       ResnetBlock(32),
                       ResnetBlock(32),]

        decoder_lis = [
            nn.ConvTranspose2d(32, 16, kernel_size=3, stride=2, padding=0, bias=False),
            nn.InstanceNorm2d(16),
            nn.ReLU(),
            # state size. 16 x 11 x 11
            nn.ConvTranspose2d(16, 8, kernel_size=3, stride=2, padding=0, bias=False),
            nn.InstanceNorm2d(8),
            nn.ReLU(),
            # state size. 8 x 23 x 23
            nn.ConvTranspose2d(8, image_nc, kernel_size=6, stride=1, padding=0, bias=False),
            nn.Tanh()
            # state size. image_nc x 28 x 28
        ]

        self.encoder = nn.Sequential(*encoder_lis)
        self.bottle_neck = nn.Sequential(*bottle_neck_lis)
        self.decoder = nn.Sequential(*decoder_lis)

    def forward(self, x):
        x = self.encoder(x)
        x = self.bottle_neck(x)
        x = self.decoder(x)
        return x


class ResnetBlock(nn.Module):
    def __init__(self, dim, padding_type='reflect', norm_layer=nn.BatchNorm2d, use_dropout=False, use_bias=False):
        super(ResnetBlock, self).__init__()
        self.conv_block = self.build_conv_block(dim, padding_type, norm_layer, use_dropout, use_bias)

    def build_conv_block(self, dim, padding_type, norm_layer, use_dropout, use_bias):
        conv_block = []
        p = 0
        if padding_type == 'reflect':
            conv_block += [nn.ReflectionPad2d(1)]
        elif padding_type == 'replicate':
            conv_block += [nn.ReplicationPad2d(1)]
        elif padding_type == 'zero':
            p = 1
        else:
            raise NotImplementedError('padding [%s] is not implemented' % padding_type)

        conv_block += [nn.Conv2d(dim, dim, kernel_size=3, padding=p, bias=use_bias),
                       norm_layer(dim),
                       nn.ReLU(True)]
        if use_dropout:
            conv_block += [nn.Dropout(0.5)]

        p = 0
        if padding_type == 'reflect':
            conv_block += [nn.ReflectionPad2d(1)]
        elif padding_type == 'replicate':
            conv_block += [nn.ReplicationPad2d(1)]
        elif padding_type == 'zero':
            p = 1
        else:
            raise NotImplementedError('padding [%s] is not implemented' % padding_type)

        conv_block += [nn.Conv2d(dim, dim, kernel_size=3, padding=p, bias=use_bias),
                       norm_layer(dim)]

        return nn.Sequential(*conv_block)

    def forward(self, x):
        out = x + self.conv_block(x)
        return out


# ---- advGAN.py (checkpoints and loss plots are not written here) ----
def init_weights(m):
    '''
        Custom weights initialization called on G and D
    '''
    classname = m.__class__.__name__
    if classname.find('Conv') != -1:
        nn.init.normal_(m.weight.data, 0.0, 0.02)
    elif classname.find('BatchNorm') != -1:
        nn.init.normal_(m.weight.data, 1.0, 0.02)
        nn.init.constant_(m.bias.data, 0)


class AdvGAN_Attack:
    def __init__(
                self,
                device,
                model,
                n_labels,
                n_channels,
                target,
                lr,
                l_inf_bound,
                alpha,
                beta,
                gamma,
                kappa,
                c,
                n_steps_D,
                n_steps_G,
                is_relativistic
            ):
        self.device = device
        self.n_labels = n_labels
        self.model = model

        self.target = target

        self.lr = lr

        self.l_inf_bound = l_inf_bound

        self.alpha = alpha
        self.beta = beta
        self.gamma = gamma
        self.kappa = kappa
        self.c = c

        self.n_steps_D = n_steps_D
        self.n_steps_G = n_steps_G

        self.is_relativistic = is_relativistic

        self.G = Generator(n_channels, n_channels, target).to(device)
        self.D = Discriminator(n_channels).to(device)

        # initialize all weights
        self.G.apply(init_weights)
        self.D.apply(init_weights)

        # initialize optimizers
        self.optimizer_G = torch.optim.Adam(self.G.parameters(), lr=self.lr)
        self.optimizer_D = torch.optim.Adam(self.D.parameters(), lr=self.lr)

    def train_batch(self, x, labels):
        # optimize D
        for i in range(self.n_steps_D):
            perturbation = self.G(x)

            adv_images = torch.clamp(perturbation, -self.l_inf_bound, self.l_inf_bound) + x
            adv_images = torch.clamp(adv_images, 0, 1)

            self.D.zero_grad()

            logits_real, pred_real = self.D(x)
            logits_fake, pred_fake = self.D(adv_images.detach())

            real = torch.ones_like(pred_real, device=self.device)
            fake = torch.zeros_like(pred_fake, device=self.device)

            if self.is_relativistic:
                loss_D_real = torch.mean((logits_real - torch.mean(logits_fake) - real)**2)
                loss_D_fake = torch.mean((logits_fake - torch.mean(logits_real) + real)**2)

                loss_D = (loss_D_fake + loss_D_real) / 2
            else:
                loss_D_real = F.mse_loss(pred_real, torch.ones_like(pred_real, device=self.device))
                loss_D_fake = F.mse_loss(pred_fake, torch.zeros_like(pred_fake, device=self.device))
                loss_D = loss_D_fake + loss_D_real

            loss_D.backward()
            self.optimizer_D.step()

        # optimize G
        for i in range(self.n_steps_G):
            self.G.zero_grad()

            perturbation = self.G(x)
            adv_images = torch.clamp(perturbation, -self.l_inf_bound, self.l_inf_bound) + x
            adv_images = torch.clamp(adv_images, 0, 1)

            # the Hinge Loss part of L
            perturbation_norm = torch.mean(torch.norm(perturbation.view(perturbation.shape[0], -1), 2, dim=1))
            loss_hinge = torch.max(torch.zeros(1, device=self.device), perturbation_norm - self.c)

            # the Adv Loss part of L
            logits_model = self.model(adv_images)
            probs_model = F.softmax(logits_model, dim=1)
            onehot_labels = torch.eye(self.n_labels, device=self.device)[labels]

            # C&W loss
            real_class_prob = torch.sum(onehot_labels * probs_model, dim=1)
            target_class_prob, _ = torch.max((1 - onehot_labels) * probs_model - onehot_labels * 10000, dim=1)
            loss_adv = torch.max(real_class_prob - target_class_prob, self.kappa * torch.ones_like(target_class_prob))
            loss_adv = torch.sum(loss_adv)

            # the GAN Loss part of L
            logits_real, pred_real = self.D(x)
            logits_fake, pred_fake = self.D(adv_images)

            if self.is_relativistic:
                loss_G_real = torch.mean((logits_real - torch.mean(logits_fake) + real)**2)
                loss_G_fake = torch.mean((logits_fake - torch.mean(logits_real) - real)**2)

                loss_G_gan = (loss_G_real + loss_G_fake) / 2
            else:
                loss_G_gan = F.mse_loss(pred_fake, torch.ones_like(pred_fake, device=self.device))

            loss_G = self.gamma * loss_adv + self.alpha * loss_G_gan + self.beta * loss_hinge
            loss_G.backward(retain_graph=True)
            self.optimizer_G.step()

        return loss_D.item(), loss_G.item(), loss_G_gan.item(), loss_hinge.item(), loss_adv.item()

    def train(self, train_dataloader, epochs):
        loss_D, loss_G, loss_G_gan, loss_hinge, loss_adv = [], [], [], [], []

        for epoch in range(1, epochs+1):
            loss_D_sum, loss_G_sum, loss_G_gan_sum, loss_hinge_sum, loss_adv_sum = 0, 0, 0, 0, 0
            for i, data in enumerate(train_dataloader, start=0):
                images, labels = data
                images, labels = images.to(self.device), labels.to(self.device)

                loss_D_batch, loss_G_batch, loss_G_fake_batch, loss_hinge_batch, loss_adv_batch = self.train_batch(images, labels)

                loss_D_sum += loss_D_batch
                loss_G_sum += loss_G_batch
                loss_adv_sum += loss_adv_batch
                loss_G_gan_sum += loss_G_fake_batch
                loss_hinge_sum += loss_hinge_batch

            # print statistics
            batch_size = len(train_dataloader)
            print('Epoch {}: \nLoss D: {}, \nLoss G: {}, \n\t-Loss Adv: {}, \n\t-Loss G GAN: {}, \n\t-Loss Hinge: {}, \n'.format(
                epoch,
                loss_D_sum / batch_size,
                loss_G_sum / batch_size,
                loss_adv_sum / batch_size,
                loss_G_gan_sum / batch_size,
                loss_hinge_sum / batch_size,
            ))

            loss_D.append(loss_D_sum / batch_size)
            loss_G.append(loss_G_sum / batch_size)
            loss_adv.append(loss_adv_sum / batch_size)
            loss_G_gan.append(loss_G_gan_sum / batch_size)
            loss_hinge.append(loss_hinge_sum / batch_size)


# ---- main.py, shrunk: MNIST-shaped random batches, the target model not trained ----
device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')

TARGET = 'MNIST'
LR, ALPHA, BETA, GAMMA, KAPPA, C = 0.001, 5, 1, 1, 0, 0.1
N_STEPS_D, N_STEPS_G = 1, 2
IS_RELATIVISTIC = True
EPOCHS = 1

batch_size = 4
l_inf_bound = .3
n_labels = 10
n_channels = 1
target_model = MNIST_target_net().to(device)
target_model.eval()

train_dataloader = [(torch.rand(batch_size, 1, 28, 28), torch.randint(0, 10, (batch_size,))) for _ in range(2)]

advGAN = AdvGAN_Attack(
                        device,
                        target_model,
                        n_labels,
                        n_channels,
                        target=TARGET,
                        lr=LR,
                        l_inf_bound=l_inf_bound,
                        alpha=ALPHA,
                        beta=BETA,
                        gamma=GAMMA,
                        kappa=KAPPA,
                        c=C,
                        n_steps_D=N_STEPS_D,
                        n_steps_G=N_STEPS_G,
                        is_relativistic=IS_RELATIVISTIC
                    )
advGAN.train(train_dataloader, EPOCHS)
