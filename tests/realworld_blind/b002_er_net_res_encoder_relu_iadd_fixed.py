"""ER-Net with the pull request's fix: ResEncoder and ResDecoder add the residual out of place, `out = out + residual`."""
# outcome: ok
# source: https://github.com/iMED-Lab/ER-Net/pull/3
# repo: iMED-Lab/ER-Net
# category: residual
# twin: b001_er_net_res_encoder_relu_iadd.py
import os
import torch
import torch.nn as nn
from torch import optim
import torch.nn.functional as F
from torch.autograd import Function
import numpy as np
from functools import partial


# ---- model.py ----
nonlinearity = partial(F.relu, inplace=True)




def downsample():
    return nn.MaxPool3d(kernel_size=2, stride=2)
def deconv(in_channels, out_channels):
    return nn.ConvTranspose3d(in_channels, out_channels, kernel_size=2, stride=2)

def initialize_weights(*models):
    for model in models:
        for m in model.modules():
            if isinstance(m, nn.Conv3d) or isinstance(m, nn.Linear):
                nn.init.kaiming_normal_(m.weight)
                if m.bias is not None:
                    m.bias.data.zero_()
            elif isinstance(m, nn.BatchNorm3d):
                m.weight.data.fill_(1)
                m.bias.data.zero_()


class ResDecoder(nn.Module):
    def __init__(self, in_channels):
        super(ResDecoder, self).__init__()
        self.conv1 = nn.Conv3d(in_channels, in_channels, kernel_size=3, padding=1)
        self.bn1 = nn.BatchNorm3d(in_channels)
        self.conv2 = nn.Conv3d(in_channels, in_channels, kernel_size=3, padding=1)
        self.bn2 = nn.BatchNorm3d(in_channels)
        self.relu = nn.ReLU(inplace=False)
        self.conv1x1 = nn.Conv3d(in_channels, in_channels, kernel_size=1)

    def forward(self, x):
        residual = self.conv1x1(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = out + residual
        out = self.relu(out)
        return out
class SFConv(nn.Module):
    def __init__(self, features, M=2, r=4, L=32):
        """ Constructor
        Args:
            features: input channel dimensionality.
            WH: input spatial dimensionality, used for GAP kernel size.
            M: the number of branchs.
            G: num of convolution groups.
            r: the radio for compute d, the length of z.
            stride: stride, default 1.
            L: the minimum dim of the vector z in paper, default 32.
        """
        super(SFConv, self).__init__()
        d = max(int(features / r), L)
        self.M = M
        self.features = features
        self.fc = nn.Linear(features, d)
        self.fcs = nn.ModuleList([])
        for i in range(M):
            self.fcs.append(
                nn.Linear(d, features)
            )
        self.softmax = nn.Softmax(dim=1)
    def forward(self, x1, x2):
        feas = torch.cat((x1.unsqueeze_(dim=1), x2.unsqueeze_(dim=1)), dim=1)
        fea_U = torch.sum(feas, dim=1)
        # fea_s = self.gap(fea_U).squeeze_()
        fea_s = fea_U.mean(-1).mean(-1).mean((-1))
        fea_z = self.fc(fea_s)
        for i, fc in enumerate(self.fcs):
            vector = fc(fea_z).unsqueeze_(dim=1)
            if i == 0:
                attention_vectors = vector
            else:
                attention_vectors = torch.cat([attention_vectors, vector], dim=1)
        attention_vectors = self.softmax(attention_vectors)
        attention_vectors = attention_vectors.unsqueeze(-1).unsqueeze(-1).unsqueeze(-1)
        fea_v = (feas * attention_vectors).sum(dim=1)
        return fea_v



class SF_Decoder(nn.Module):
    def __init__(self, out_channels):
        super(SF_Decoder, self).__init__()
        self.conv1 = SFConv(out_channels)
        self.bn1 = nn.BatchNorm3d(out_channels)
        self.relu = nn.ReLU(inplace=False)
        self.ResDecoder = ResDecoder(out_channels)

    def forward(self, x1, x2):
        out = self.relu(self.bn1(self.conv1(x1, x2)))
        out = self.ResDecoder(out)
        return out

class ResEncoder(nn.Module):
    def __init__(self, in_channels, out_channels):
        super(ResEncoder, self).__init__()
        self.conv1 = nn.Conv3d(in_channels, out_channels, kernel_size=3, padding=1)
        self.bn1 = nn.BatchNorm3d(out_channels)
        self.conv2 = nn.Conv3d(out_channels, out_channels, kernel_size=3, padding=1)
        self.bn2 = nn.BatchNorm3d(out_channels)
        self.relu = nn.ReLU(inplace=False)
        self.conv1x1 = nn.Conv3d(in_channels, out_channels, kernel_size=1)

    def forward(self, x):
        residual = self.conv1x1(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = out + residual
        out = self.relu(out)
        return out
class ER_Net(nn.Module):
    def __init__(self, classes, channels):
        # def __init__(self):

        super(ER_Net, self).__init__()
        self.encoder1 = ResEncoder(channels, 32)
        self.encoder2 = ResEncoder(32, 64)
        self.encoder3 = ResEncoder(64, 128)
        self.bridge = ResEncoder(128, 256)

        self.conv1_1 = nn.Conv3d(256, 1, kernel_size=1)
        self.conv2_2 = nn.Conv3d(128, 1, kernel_size=1)
        self.conv3_3 = nn.Conv3d(64, 1, kernel_size=1)

        self.convTrans1 = nn.ConvTranspose3d(1, 1, kernel_size=2, stride=2)
        self.convTrans2 = nn.ConvTranspose3d(1, 1, kernel_size=2, stride=2)
        self.convTrans3 = nn.ConvTranspose3d(1, 1, kernel_size=2, stride=2)

        self.decoder3 = SF_Decoder(128)
        self.decoder2 = SF_Decoder(64)
        self.decoder1 = SF_Decoder(32)
        self.down = downsample()
        self.up3 = deconv(256, 128)
        self.up2 = deconv(128, 64)
        self.up1 = deconv(64, 32)
        self.final = nn.Conv3d(32, classes, kernel_size=1, padding=0)
        initialize_weights(self)

    def forward(self, x):
        enc1 = self.encoder1(x)
        down1 = self.down(enc1)

        enc2 = self.encoder2(down1)
        down2 = self.down(enc2)

        con3_3 = self.conv3_3(enc2)
        convTrans3 = self.convTrans3(con3_3)
        x3 = -1 * (torch.sigmoid(convTrans3)) + 1
        x3 = x3.expand(-1, 32, -1, -1, -1).mul(enc1)
        x3 = x3 + enc1

        enc3 = self.encoder3(down2)
        down3 = self.down(enc3)

        con2_2 = self.conv2_2(enc3)
        convTrans2 = self.convTrans2(con2_2)
        x2 = -1 * (torch.sigmoid(convTrans2)) + 1
        x2 = x2.expand(-1, 64, -1, -1, -1).mul(enc2)
        x2 = x2 + enc2

        bridge = self.bridge(down3)

        conv1_1 = self.conv1_1(bridge)
        convTrans1 = self.convTrans1(conv1_1)

        x = -1 * (torch.sigmoid(convTrans1)) + 1
        x = x.expand(-1, 128, -1, -1, -1).mul(enc3)
        x = x + enc3

        up3 = self.up3(bridge)
        dec3 = self.decoder3(up3, x)

        up2 = self.up2(dec3)
        dec2 = self.decoder2(up2, x2)

        up1 = self.up1(dec2)
        dec1 = self.decoder1(up1, x3)

        final = self.final(dec1)
        final = F.sigmoid(final)
        return final


# ---- losses.py (the parts used) ----
class DiceCoeff(Function):
    """Dice coeff for individual examples"""

    def forward(self, input, target):
        self.save_for_backward(input, target)
        eps = 1
        self.inter = torch.dot(input.view(-1), target.view(-1))
        self.union = torch.sum(input) + torch.sum(target) + eps

        t = (2 * self.inter.float()) / self.union.float()
        return t


def dice_coeff(input, target):
    """Dice coeff for batches"""
    if input.is_cuda:
        s = torch.FloatTensor(1).cuda().zero_()
    else:
        s = torch.FloatTensor(1).zero_()

    for i, c in enumerate(zip(input, target)):
        s = s + DiceCoeff().forward(c[0], c[1])

    return s / (i + 1)


def dice_coeff_loss(input, target):
    return 1 - dice_coeff(input, target)


class boundary_loss_func(nn.Module):
    def __init__(self):
        super(boundary_loss_func, self).__init__()
        self.weight1 = nn.Parameter(torch.Tensor([1.]))
        self.weight2 = nn.Parameter(torch.Tensor([1.]))

    def forward(self, boundary_logits, gtmasks):
        laplacian_kernel = torch.tensor(
            [-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, 26, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
             -1],
            dtype=torch.float32).reshape(1, 1, 3, 3, 3)
        boundary_targets = F.conv3d(gtmasks, laplacian_kernel, padding=1)
        boundary_targets = boundary_targets.clamp(min=0)
        boundary_targets[boundary_targets > 0.1] = 1
        boundary_targets[boundary_targets <= 0.1] = 0
        if boundary_logits.shape[-1] != boundary_targets.shape[-1]:
            boundary_targets = F.interpolate(
                boundary_targets, boundary_logits.shape[2:], mode='nearest')
        dice_loss = dice_coeff_loss(boundary_logits, boundary_targets)
        bce_loss = F.binary_cross_entropy_with_logits(boundary_logits, boundary_targets)
        total_loss = self.weight1.pow(-2) * bce_loss + \
                     self.weight2.pow(-2) * dice_loss + \
                     (1 + self.weight1 * self.weight2).log()  # return (2 * bce_loss + 8 * dice_loss) / 10
        return total_loss


# ---- train_metrics.py / evaluation_metrics3D.py (the parts used) ----
def metrics_3d(pred, gt):
    pred = np.where(pred > 150, 255.0, 0)
    pred = np.int64(pred / 255)
    gt = np.int64(gt / 255)
    TP = np.sum((pred == 1) & (gt == 1))
    FN = np.sum((pred == 0) & (gt == 1))
    FP = np.sum((pred == 1) & (gt == 0))
    TN = np.sum((pred == 0) & (gt == 0))
    sen = TP / (TP + FN + 1e-6)
    spe = TN / (TN + FP + 1e-6)
    dsc = 2 * TP / (2 * TP + FP + FN + 1e-6)
    return sen, spe, dsc


def metrics3d(pred, label, batch_size):
    pred = (pred.data.cpu().numpy() * 255).astype(np.uint8)
    label = (label.data.cpu().numpy() * 255).astype(np.uint8)  # for miccai data

    auc, acc, sen, spe, iou, dsc, pre = 0, 0, 0, 0, 0, 0, 0
    for i in range(batch_size):
        img = pred[i, :, :, :]
        gt = label[i, :, :, :]
        SEN, SPE, DSC = metrics_3d(img, gt)
        sen += SEN
        spe += SPE
        dsc += DSC
    return sen, spe, dsc


# ---- train_3D.py (CPU, random volumes instead of the nerve data set, two steps) ----
args = {
    'root': '/home/PycharmProjects/Attention/',
    'data_path': './data/',
    'fold': 3,
    'epochs': 1,
    'lr': 0.0001,
    'snapshot': 50,
    'test_step': 2,
    'ckpt_path': './checkpoint/',
    'batch_size': 1,
    'env': 'ER_NET'
}


# adjust learning rate (poly)
def adjust_lr(optimizer, base_lr, iter, max_iter, power=0.9):
    lr = base_lr * (1 - float(iter) / max_iter) ** power
    for param_group in optimizer.param_groups:
        param_group['lr'] = lr


def train():
    net = ER_Net(classes= 1,channels=1)
    optimizer = optim.Adam(net.parameters(), lr=args['lr'], weight_decay=0.0005)
    critrion = boundary_loss_func()
    iters = 1
    best_sen, best_dsc = 0., 0.

    batchs_data = [(torch.rand(1, 1, 16, 16, 16), (torch.rand(1, 1, 16, 16, 16) > 0.7).float()) for _ in range(2)]
    for epoch in range(args['epochs']):
        net.train()
        for idx, batch in enumerate(batchs_data):
            image = batch[0].type(torch.FloatTensor)
            label = batch[1].type(torch.FloatTensor)
            optimizer.zero_grad()
            pred = net(image)
            loss1 = dice_coeff_loss(pred, label)
            sen, spe, dsc = metrics3d(pred, label, pred.shape[0])
            if dsc < 0.8:  ##  it can be 0.6, 0.7, 0.8;adjust to your data set
                loss = loss1

            else:
                loss2 = critrion(pred, label)
                loss = loss1 + loss2
            loss.backward()
            optimizer.step()
            print('{0:d}:{1:d}] \u2501\u2501\u2501 loss:{2:.10f}\tsen:{3:.4f}\tspe:{4:.4f}\tdsc:{5:.4f}'.format
                  (epoch + 1, iters, loss.item(), sen / pred.shape[0], spe / pred.shape[0], dsc / pred.shape[0]))
            iters += 1

        adjust_lr(optimizer, base_lr=args['lr'], iter=epoch, max_iter=args['epochs'], power=0.9)


if __name__ == '__main__':
    train()
